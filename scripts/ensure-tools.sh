#!/usr/bin/env bash
# Installs what `make test` needs beyond Go, so a fresh machine needs nothing but this repository:
# zsh and bash-completion (the etcdctl completion test loads the zsh and bash scripts into real
# shells) and nix (Debian's nix-bin, for make nix-check). Installs with apt-get when running as root; otherwise says what to install.
set -euo pipefail
declare -A package=([zsh]=zsh [nix]=nix-bin)
missing=()
for tool in "${!package[@]}"; do
	command -v "$tool" >/dev/null || missing+=("${package[$tool]}")
done
# cobra's bash script (upstream etcdctl's) needs bash-completion's helpers
[ -f /usr/share/bash-completion/bash_completion ] || missing+=(bash-completion)
((${#missing[@]})) || exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
	echo "make test needs ${missing[*]}: install them (Debian: apt-get install ${missing[*]}) and run it again" >&2
	exit 1
fi
echo "installing ${missing[*]} (needed by make test)"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
