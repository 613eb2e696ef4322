#!/bin/sh
# deb.sh [OUT] - make deb: build the Debian packages vfsentinel and
# vfsentinel-guest (debian/) from a copy of the working tree, so the
# build's files never land in the tree: the .deb files, the .buildinfo
# and .changes end up in OUT (default build-deb/, ignored by git). Then
# lintian checks both packages (--pedantic: an error, a warning or a
# pedantic tag fails), and the build log must hold no warning from the
# debhelper tools (dh_runit, dpkg-gencontrol's unused substitutions).
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
# With VFS_DEB_VERSION=V, the packages say version V (a changelog entry
# on top, in the copy only): t/deb builds a higher version to upgrade to.
if [ -n "${VFS_DEB_VERSION:-}" ]; then
	cl=$out/src/debian/changelog
	who=$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$cl" | head -1)
	{
		printf 'vfsentinel (%s) unstable; urgency=medium\n\n' \
		    "$VFS_DEB_VERSION"
		printf '  * Rebuilt as version %s.\n\n' "$VFS_DEB_VERSION"
		printf ' -- %s  %s\n\n' "$who" "$(date -R)"
		cat "$cl"
	} >"$cl.new"
	mv "$cl.new" "$cl"
fi
(cd "$out/src" && dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -40 "$out/build.log" >&2
	exit 1
}
if grep -E 'warning|Use of uninitiali[sz]ed' "$out/build.log" |
    grep -v -e '-Wl,' -e '-W[a-z]' >"$out/warnings.log"; then
	cat "$out/warnings.log" >&2
	echo "deb: the build log has warnings ($out/build.log)" >&2
	exit 1
fi
ls "$out"/*.deb
# VFS_DEB_LINTIAN=no: a rebuild lintian already saw (the upgrade test's).
[ "${VFS_DEB_LINTIAN:-yes}" = no ] && exit 0
lintian --pedantic --fail-on error,warning,pedantic --info "$out"/*.changes
