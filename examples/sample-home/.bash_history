#1796027400
cd ~/dev/webshop
#1796027405
git pull --rebase
#1796027431
export GITHUB_TOKEN={{FAKE_GITHUB_TOKEN}}
#1796027440
gh pr list --author @me
#1796027700
for i in $(seq 20); do
  pytest -q tests/test_checkout.py || break
done
#1796031010
make lint
