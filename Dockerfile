# The IMD box: a Debian trixie container whose root entrypoint sets the firewall,
# verifies it, and hands over to the unprivileged `imd` user with no capabilities.
#
# Pins: Debian packages come from the signed trixie archive; every npm artifact
# (Node, npm, Foundry, Playwright MCP, Claude Code's sandbox library) is pinned by
# version in image/package.json and by sha512 in image/package-lock.json, and
# `npm ci` refuses a mismatch.
#
# Layer order: apt, then the fetched artifacts, then the user, and only at the
# end the entrypoint/firewall/worker scripts, so editing those refetches nothing.

ARG BASE_IMAGE=debian:trixie-slim

# ---------------------------------------------------------------- fetch stage
# Debian's own node+npm only download and verify; nothing of this stage but the
# checked files reaches the final image.
FROM ${BASE_IMAGE} AS fetch
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Extra CA certificates (TLS-inspecting networks, corporate proxies): *.crt in ca/.
COPY ca/ /usr/local/share/ca-certificates/imd-box/
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates nodejs npm \
 && update-ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
WORKDIR /fetch
COPY image/package.json image/package-lock.json image/closure.mjs ./
# --ignore-scripts: nothing downloaded runs at build time. The platform packages
# carry os/cpu fields, so npm installs only the build architecture's Node and Foundry.
# Playwright MCP and the sandbox runtime (`srt`, what `box check` runs Claude Code's
# sandbox with) each get a node_modules of exactly what they load (closure.mjs
# reads the lock), so neither runs with the other's packages. The sandbox runtime's
# Windows helper (vendor/srt-win, 7.6 MB of .exe) can never run here.
RUN npm ci --ignore-scripts --no-audit --no-fund \
 && case "$(dpkg --print-architecture)" in \
      amd64) node_arch=x64; foundry_arch=amd64 ;; \
      arm64) node_arch=arm64; foundry_arch=arm64 ;; \
      *) echo "unsupported architecture: $(dpkg --print-architecture)" >&2; exit 1 ;; \
    esac \
 && mkdir -p /out/bin /out/lib/node_modules /out/opt \
 && cp "node_modules/node-linux-${node_arch}/bin/node" /out/bin/node \
 && for tool in forge cast anvil chisel; do \
      src="node_modules/@foundry-rs/${tool}-linux-${foundry_arch}/bin/${tool}"; \
      if [ "$tool/$foundry_arch" = chisel/arm64 ]; then echo "chisel 1.7.1 has no linux-arm64 package: skipped"; continue; fi; \
      cp "$src" "/out/bin/${tool}"; \
    done \
 && mv node_modules/npm /out/lib/node_modules/npm \
 && mkdir -p /out/opt/playwright-mcp /out/opt/sandbox-runtime \
 && node closure.mjs node_modules/@playwright/mcp | xargs cp -a --parents -t /out/opt/playwright-mcp \
 && node closure.mjs node_modules/@anthropic-ai/sandbox-runtime | xargs cp -a --parents -t /out/opt/sandbox-runtime \
 && rm -rf /out/opt/sandbox-runtime/node_modules/@anthropic-ai/sandbox-runtime/vendor/srt-win

# ---------------------------------------------------------------- the door
# worker/door/door.c with its paths.h (written from imdbox/layout.py), compiled with Debian's gcc,
# static: each call's client starts it, and a static one starts 0.2 ms sooner. Bash's `take`
# (worker/door/take.c), built as bash's loadable builtins are, against bash-builtins' headers.
# Nothing else of this stage reaches the box.
FROM ${BASE_IMAGE} AS door
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev bash-builtins \
 && rm -rf /var/lib/apt/lists/*
COPY worker/door/door.c worker/door/take.c worker/door/paths.h worker/door/ready.h /src/
RUN mkdir -p /out && gcc -O2 -static -Wall -Wextra -Werror -o /out/door /src/door.c \
 && gcc -O2 -Wall -Werror -fPIC -shared -DHAVE_CONFIG_H -I/usr/include/bash -I/usr/include/bash/include \
      -I/usr/include/bash/builtins -o /out/take /src/take.c

# ---------------------------------------------------------------- the box
FROM ${BASE_IMAGE}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

COPY ca/ /usr/local/share/ca-certificates/imd-box/
# Versions come from the signed trixie archive; pinning exact Debian revisions
# would break every rebuild after a security update. `box update` sets APT_REFRESH
# to the day of the update, so this layer and the ones below are rebuilt with the
# newest trixie packages (once a day at most); `box build` passes the value the
# current image was built with (its label below), so a plain build keeps them cached.
ARG APT_REFRESH=
# hadolint ignore=DL3008
RUN echo "Debian packages as of: ${APT_REFRESH:-the first build}" \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl git iptables bubblewrap socat tini iproute2 procps \
      util-linux libcap2-bin ripgrep passt bash-builtins \
 && update-ca-certificates \
 && apt-get clean && rm -rf /var/lib/apt/lists/*

# The browser: Debian's Chrome Headless Shell (Playwright's own download cannot be used).
# dpkg leaves out what a headless shell never loads (it renders with its own
# SwiftShader): Mesa's GPU drivers and the LLVM and Z3 they link, Vulkan's
# validation and mock layers, every UI language but en-US, translations and docs.
# `apt-get clean`: no downloaded .deb stays in the layer.
# hadolint ignore=DL3008
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      -o 'Dpkg::Options::=--path-exclude=/usr/lib/*/libLLVM*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/lib/*/libgallium*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/lib/*/libz3.so*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/lib/*/dri/*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/lib/*/gbm/*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/lib/chromium/libVk*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/lib/chromium/locales/*' \
      -o 'Dpkg::Options::=--path-include=/usr/lib/chromium/locales/en-US.pak' \
      -o 'Dpkg::Options::=--path-exclude=/usr/share/locale/*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/share/doc/*' \
      -o 'Dpkg::Options::=--path-exclude=/usr/share/man/*' \
      chromium-headless-shell fonts-liberation \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* \
 && /usr/lib/chromium/chromium-headless-shell --version

COPY --from=fetch /out/bin/ /usr/local/bin/
COPY --from=fetch /out/lib/ /usr/local/lib/
COPY --from=fetch /out/opt/ /opt/
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && node --version && npm --version && forge --version \
 && node /opt/sandbox-runtime/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js --version

# Every tool inside trusts the system bundle, which holds any CA added above.
# PATH holds the image's own directories only: root (the entrypoint, any
# `docker exec`) must never run what the volume holds. The worker's PATH, with
# the volume's npm bin first, is set by worker/as-imd after the drop.
ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    IMD_HOME=/home/imd \
    IDENTITYMD_HOME=/home/imd/.identitymd \
    NPM_CONFIG_PREFIX=/home/imd/.npm-global \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Claude Code's managed settings (image/claude-code/README.md says where each key
# is documented): root's, read-only, so nothing in the volume can loosen them. They
# turn Claude's sandbox on for every Bash command, refuse to start without it and
# keep the login, the device key and tools.env out of its reach.
COPY image/claude-code/managed-settings.json /etc/claude-code/managed-settings.json
RUN chmod 0755 /etc/claude-code \
 && chmod 0644 /etc/claude-code/managed-settings.json \
 && node -e 'JSON.parse(require("fs").readFileSync("/etc/claude-code/managed-settings.json", "utf8"))'

# uid 1000; its home is the imd-worker-home volume (logins, worker, pairing).
# No setuid or setgid file stays (su, mount, passwd, ...: nothing in the box
# needs them), so no_new_privs is not the only thing that keeps them harmless.
RUN useradd --uid 1000 --user-group --create-home --home-dir /home/imd --shell /bin/bash imd \
 && chmod 700 /home/imd \
 && find / -xdev -perm /6000 -type f -exec chmod ug-s {} + \
 && test -z "$(find / -xdev -perm /6000 -type f)"

# V8's compiled code for the browser's MCP server, which starts for every `box check`
# and every job's browser, and for the sandbox runtime (srt), which line 16 of the check
# starts twice: made here, so a start skips compiling their bundles (1.5 s of CPU for the
# check's browser line, 1.2 s with it; srt's --version 146-180 ms, 121-141 ms with it).
# node keeps one cache per uid, so imd's is made by imd, then given to root: read-only in
# the box, code the check runs never comes from the volume. Only the browser's launcher and
# the check point node at it (NODE_COMPILE_CACHE): a node given it also writes its new
# entries at exit.
RUN cache=/usr/local/lib/imd-box/node-compile-cache \
 && install -d -o imd -g imd "$cache" \
 && setpriv --reuid=imd --regid=imd --init-groups env NODE_COMPILE_CACHE="$cache" \
      node /opt/playwright-mcp/node_modules/@playwright/mcp/cli.js --help >/dev/null \
 && setpriv --reuid=imd --regid=imd --init-groups env NODE_COMPILE_CACHE="$cache" \
      node /opt/sandbox-runtime/node_modules/@anthropic-ai/sandbox-runtime/dist/cli.js --help >/dev/null \
 && chown -R root:root "$cache" \
 && chmod -R u=rwX,go=rX "$cache"

# The /dev of the worker's hands' jails (worker/jail.d/home, HANDS_DEV): the box's null, zero,
# random and urandom and the links every /dev has, bound into each jail in one mount. A tmpfs
# with a bind for each node cost a call 1.1-1.4 ms: bubblewrap reads every mount for each bind.
RUN dev=/usr/local/lib/imd-box/hands-dev \
 && install -d "$dev" "$dev/shm" \
 && mknod -m 666 "$dev/null" c 1 3 && mknod -m 666 "$dev/zero" c 1 5 \
 && mknod -m 666 "$dev/random" c 1 8 && mknod -m 666 "$dev/urandom" c 1 9 \
 && ln -s /proc/self/fd "$dev/fd" && ln -s /proc/self/fd/0 "$dev/stdin" \
 && ln -s /proc/self/fd/1 "$dev/stdout" && ln -s /proc/self/fd/2 "$dev/stderr"

COPY firewall/ /usr/local/lib/imd-box/firewall/
COPY worker/ /usr/local/lib/imd-box/worker/
COPY --from=door /out/door /usr/local/lib/imd-box/worker/door/door
COPY --from=door /out/take /usr/local/lib/imd-box/worker/door/take
COPY browser/ /usr/local/lib/imd-box/browser/
COPY entrypoint.sh /usr/local/bin/entrypoint.sh

# Last, so a new commit (REVISION) changes only this metadata step: every RUN
# above keeps its cache (a build arg declared earlier is part of each RUN's cache key).
ARG VERSION=dev
ARG REVISION=unknown
ARG BASE_IMAGE
# What the next `box build` / `box update` builds on again (imdbox/images.py).
LABEL io.identitymd.box.base-image="${BASE_IMAGE}" \
      io.identitymd.box.apt-refresh="${APT_REFRESH}" \
      org.opencontainers.image.title="IMD Box" \
      org.opencontainers.image.description="A walled Debian container for the IMD worker: no host files, no host network, only the internet." \
      org.opencontainers.image.source="https://github.com/Identity-md/box" \
      org.opencontainers.image.licenses="MIT" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"

# Health: the walls verified in this start, and the worker alive. Docker runs this
# as root, so it goes through the one privilege drop, by path (worker/healthy).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/lib/imd-box/worker/as-imd", "/usr/local/lib/imd-box/worker/healthy"]

# The entrypoint execs tini as `imd` once the walls are up: PID 1 then signals the worker
# as its own user (a root tini without CAP_KILL could not forward `docker stop`'s SIGTERM).
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
# The worker runs in its view of the box, the door at its side (worker/door/view).
CMD ["/usr/local/lib/imd-box/worker/door/view", "/usr/local/lib/imd-box/worker/run.sh"]
