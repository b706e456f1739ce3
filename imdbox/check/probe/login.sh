#!/bin/sh
# box check's probe (line 25), in a job's jail, outside Claude's sandbox (where Claude Code runs):
# the login it holds, up to the line END; a CONNECT to the box's loopback (BOX-PORT: the probe
# listens there) through every port of the broker's a job could try (its login hosts' 443, the
# proxy's own BROKER-PORT); and with the owner's login (KIND "real"), one free request with it
# through the broker (the account's profile).
# `sh -c LOOK login KIND BROKER-PORT BOX-PORT END`. Shipped as text (imdbox/check/bundle.py).
cat ~/.claude/.credentials.json 2>/dev/null || echo "no login"
echo
echo "$4"
for proxy in 127.0.0.1:443 "127.0.0.1:$2"; do
  curl -q -sS -p --max-time 3 -o /dev/null -x "http://$proxy" "http://127.0.0.1:$3/" 2>/dev/null && echo "tunnel $proxy"
done
{ [ "$1" = real ] && [ -s ~/.claude/.credentials.json ]; } || exit 0
a=$(sed -nE 's/.*"accessToken":"([^"]*)".*/\1/p' ~/.claude/.credentials.json 2>/dev/null)
curl -sS --max-time 10 -o /dev/null -w 'profile %{http_code}\n' -H "Authorization: Bearer $a" \
  -H 'anthropic-beta: oauth-2025-04-20' https://api.anthropic.com/api/oauth/profile 2>&1 | tail -n 1
