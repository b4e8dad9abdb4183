#!/usr/bin/env bash
# The balancer in front of the gateways (docs/deploy.md): HAProxy from Debian bookworm's
# package, at a pinned upstream release (HAPROXY_VERSION; the newest Debian revision of it, so
# Debian's security fixes come in), with exactly the shared libraries it links, extracted
# from Debian's packages into a root for a FROM scratch image.
#
#   deploy/images/haproxy/rootfs.sh OUT_DIR
set -euo pipefail
out=$(realpath -m "$1")
HAPROXY_VERSION=${HAPROXY_VERSION:-2.6.12}

# Kept while it is of the pinned release.
if grep -qs "^$HAPROXY_VERSION-" "$out/haproxy.version"; then exit 0; fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
find_version() { apt-cache madison haproxy 2>/dev/null | awk -v v="$HAPROXY_VERSION-" 'index($3, v) == 1 {print $3; exit}'; }
version=$(find_version)
if [ -z "$version" ]; then
	apt-get update -qq
	version=$(find_version)
fi
[ -n "$version" ] || { echo "haproxy $HAPROXY_VERSION is not in Debian's package lists" >&2; exit 1; }

# haproxy and the library packages it depends on, recursively.
libs=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
	--no-replaces --no-enhances "haproxy=$version" | sed -n 's/^\(lib[^ <]*\)$/\1/p' | sort -u)
# apt-get download as root warns it cannot drop privileges to _apt; harmless here.
apt-get download -q "haproxy=$version" $libs >/dev/null 2>&1 ||
	apt-get download "haproxy=$version" $libs
mkdir root
for deb in *.deb; do dpkg-deb -x "$deb" root; done

# Copy the binary, the loader and what the loader resolves, nothing else.
loader=root/lib64/ld-linux-x86-64.so.2
libpath=root/lib/x86_64-linux-gnu:root/usr/lib/x86_64-linux-gnu
rm -rf "$out"
mkdir -p "$out"
copy() { mkdir -p "$out/$(dirname "$1")" && cp -L "root/$1" "$out/$1"; }
copy usr/sbin/haproxy
copy lib64/ld-linux-x86-64.so.2
resolved=$("$loader" --library-path "$libpath" --list root/usr/sbin/haproxy)
if grep -q 'not found' <<<"$resolved"; then echo "$resolved" >&2; exit 1; fi
for lib in $(awk '$2 == "=>" {print $3}' <<<"$resolved"); do copy "${lib#root/}"; done
"$out/lib64/ld-linux-x86-64.so.2" --library-path "$out/lib/x86_64-linux-gnu:$out/usr/lib/x86_64-linux-gnu" "$out/usr/sbin/haproxy" -v | head -1
echo "$version" >"$out/haproxy.version"
