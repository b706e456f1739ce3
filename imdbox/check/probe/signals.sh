#!/bin/bash
# box check's probe (line 24), in a job's jail: which of its arguments' processes (the door's and
# the login broker's, outside the jail) it can signal, then "tried". Shipped as text
# (imdbox/check/bundle.py).
for pid in "$@"; do
  ! kill -0 "$pid" 2>/dev/null || echo "signalled $pid"
done
echo tried
