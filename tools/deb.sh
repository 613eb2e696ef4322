#!/bin/sh
# deb.sh [OUT] - make deb: build the Debian packages vfsentinel and
# vfsentinel-guest (debian/) from a copy of the working tree, so the
# build's files never land in the tree: the .deb files, the .buildinfo
# and .changes end up in OUT (default build-deb/, ignored by git). Then
# lintian checks both packages; an error or a warning fails.
set -eu
out=${1:-build-deb}
rm -rf "$out"
mkdir -p "$out/src"
# The tracked and the untracked-but-not-ignored files, as they are now;
# with VFS_DEB_REV=REV, that commit's tree instead.
if [ -n "${VFS_DEB_REV:-}" ]; then
	git archive "$VFS_DEB_REV" | tar -xf - -C "$out/src"
else
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 tar -cf - | tar -xf - -C "$out/src"
fi
(cd "$out/src" && dpkg-buildpackage -us -uc -b)
ls "$out"/*.deb
lintian --fail-on error,warning --info "$out"/*.changes
