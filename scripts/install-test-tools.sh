#!/usr/bin/env bash
# Installs every tool a test may need, so `swift test` skips nothing (what .ci/run does):
#   sudo scripts/install-test-tools.sh        (apt-get and pip need root here)
#
# Some tests run real tools: shells for the completions (bash, zsh, fish), formatters for
# the man page (groff, mandoc, man), curl and jq as references, Chromium to write a HAR, python3 and openssl for the
# TLS and proxy peers, nginx for HTTP/2 over TLS, script for a pseudo-terminal, strace for the files a run opens, tmux for what a
# real terminal multiplexer draws, flock to hold a build lock; real servers from PyPI (Django
# OAuth Toolkit, Django REST Framework, WsgiDAV, Datasette). A test whose tool is missing is
# skipped and says which: `swift test 2>&1 | grep -i 'skipped'` lists them.
# Debian and Ubuntu (apt-get); elsewhere it names the packages it could not install.
set -uo pipefail

packages=()
for pair in bash:bash zsh:zsh fish:fish mandoc:mandoc groff:groff-base man:man-db script:bsdutils curl:curl jq:jq \
            python3:python3 python3-pip:python3-pip openssl:openssl nginx:nginx-light install:coreutils nohup:coreutils \
            tmux:tmux flock:util-linux cc:gcc chromium:chromium strace:strace; do
  tool=${pair%%:*} package=${pair#*:}
  if [ "$tool" = python3-pip ]; then
    python3 -m pip --version >/dev/null 2>&1 || packages+=("$package")
  else
    command -v "$tool" >/dev/null 2>&1 || packages+=("$package")
  fi
done
# Shared libraries tests load (Tools.requireLibrary): brotli and zstd, to make and decode br
# and zstd replies, and libcurl for a shim over it (KeeperEncodingTests).
for pair in libbrotlienc.so.1:libbrotli1 libbrotlidec.so.1:libbrotli1 libzstd.so.1:libzstd1 libcurl.so.4:libcurl4; do
  library=${pair%%:*} package=${pair#*:}
  { ldconfig -p 2>/dev/null | grep -q "^[[:space:]]*$library " ; } || [[ " ${packages[*]} " == *" $package "* ]] || packages+=("$package")
done
if [ ${#packages[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "install-test-tools: installing ${packages[*]}" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null \
      || echo "install-test-tools: could not install ${packages[*]}; the tests that need them will say so" >&2
  else
    echo "install-test-tools: missing ${packages[*]} (install them as root with apt-get, or your system's packages)" >&2
  fi
fi

pip_install() {  # MODULES... -- PACKAGES...: installs PACKAGES when a module does not import
  local modules=() packages=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do modules+=("$1"); shift; done
  shift
  packages=("$@")
  command -v python3 >/dev/null 2>&1 || return 0
  local list; list=$(IFS=,; echo "${modules[*]}")
  python3 -c "import $list" >/dev/null 2>&1 && return 0
  echo "install-test-tools: installing ${packages[*]}" >&2
  python3 -m pip install --quiet "${packages[@]}" \
    || echo "install-test-tools: could not install ${packages[*]}; the tests that need them will say so" >&2
}
# A real OAuth2 provider for OAuth2ProviderTests: Django OAuth Toolkit. Its 3.x device grant
# fails (HTTP 500) with oauthlib 4, so oauthlib stays below 4.
pip_install oauth2_provider -- django-oauth-toolkit 'oauthlib<4'
# Real REST servers for OtherServerTests: Django REST Framework, WsgiDAV (on cheroot), Datasette.
pip_install rest_framework wsgidav cheroot datasette -- djangorestframework wsgidav cheroot datasette
# An authorization server nobody here wrote for ResourceLoginTests (auth login URL): the MCP
# Python SDK's mcp.server.auth (RFC 9728, RFC 8414, RFC 7591, PKCE), served by uvicorn.
pip_install mcp.server.auth.routes uvicorn -- mcp uvicorn
# Real servers for issue 43 (GraphQLServerTests, StreamServerTests): Strawberry GraphQL with
# nested connections, Kinto's Next-Page header, sse-starlette's event stream (all on uvicorn).
pip_install strawberry uvicorn -- strawberry-graphql uvicorn
pip_install kinto -- kinto
pip_install sse_starlette uvicorn -- sse-starlette uvicorn
# Real API descriptions for OpenAPIServerTests: FastAPI (OpenAPI 3.1, served by uvicorn) and
# Kinto (Swagger 2.0 at /v1/__api__). libyaml (libyaml-0-2) reads YAML descriptions.
pip_install fastapi uvicorn kinto -- fastapi uvicorn kinto
# And for OpenAPIPeerTests: jupyter-server (its package's Swagger 2.0 api.yaml, against the
# running server) and drf-spectacular (OpenAPI 3.0 from a Django REST Framework app).
pip_install jupyter_server drf_spectacular -- jupyter-server drf-spectacular
# Clients nobody here wrote, for RecordAnyClientTests: HTTPie (run as python3 -m httpie)
# recorded through `sandbox --proxy-to`, and Playwright driving the system's Chromium (apt:
# chromium, above; not Playwright's own download) to write a HAR.
pip_install httpie playwright -- httpie playwright
# A strict OpenID Connect client for ReplayedLoginTests.swift: PyJWT (PyJWKClient, RS256 and ES256 through
# cryptography) over requests, against a replay of Django OAuth Toolkit's login.
pip_install jwt requests cryptography -- 'PyJWT[crypto]' requests
# mitmdump: mitmproxy, for FakeAnyAPITests (a HAR written by a tool nobody here wrote), in a
# venv of its own: its pins (h11, cryptography) conflict with the servers above. mitmdump is
# linked onto PATH.
if ! command -v mitmdump >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
  echo "install-test-tools: installing mitmproxy (mitmdump) in /opt/mitmproxy" >&2
  { python3 -m venv /opt/mitmproxy && /opt/mitmproxy/bin/pip install --quiet mitmproxy \
      && ln -sf /opt/mitmproxy/bin/mitmdump /usr/local/bin/mitmdump; } \
    || echo "install-test-tools: could not install mitmproxy; the tests that need mitmdump will say so" >&2
fi
exit 0
