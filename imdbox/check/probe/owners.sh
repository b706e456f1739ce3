#!/bin/bash
# box check's probe (line 24), as `box shell CMD` runs it (`bash -c OWNERS`): where the owner's
# tools look (the home, Claude Code's config) and what they read of the worker's ~/.gitconfig and
# ~/.inputrc. Shipped as text (imdbox/check/bundle.py).
printf 'home %s\nclaude %s\n' "$HOME" "${CLAUDE_CONFIG_DIR:-}"
git config --global --get imdbox.check 2>/dev/null
cat "${INPUTRC:-$HOME/.inputrc}" 2>/dev/null
true
