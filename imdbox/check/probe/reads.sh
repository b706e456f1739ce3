#!/bin/sh
# box check's probe (line 16), a shell's reads in a job's jail: each file's digest, or "denied";
# only a digest leaves the jail, never the content. Then, when a command follows the files, it
# runs in the shell's place (the next command of a job's work: the preview server's client).
# `sh -c READS jail SHA256SUM COUNT FILE... [COMMAND ARG...]`: COUNT files are read. Shipped as
# text (imdbox/check/bundle.py).
sha=$1 n=$2
shift 2
while [ "$n" -gt 0 ]; do
  f=$1
  shift
  n=$((n - 1))
  if d=$("$sha" -- "$f" 2>/dev/null); then echo "IMD-JAIL $f ${d%% *}"; else echo "IMD-JAIL $f denied"; fi
done
[ $# -eq 0 ] || exec "$@"
