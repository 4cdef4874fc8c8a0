#!/usr/bin/env bash
# make release and make release-check: a release of the commit checked out, under
# dist/VERSION (hack/release, internal/build/release), built only from a tree without uncommitted
# changes, stamped with the commit and dated by its time (SOURCE_DATE_EPOCH).
#
#   hack/release.sh build   (make release VERSION=x.y.z; VERSION must be the file's)
#   hack/release.sh check   (make release-check: build, then build again from a copy of the
#                            commit in another folder with an empty Go build cache, and compare
#                            every file; SHARED_CACHE=1 keeps the build cache, which is faster and
#                            checks all but the compiler's own determinism)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

file_version="$(tr -d '[:space:]' <VERSION)"
version="${VERSION:-$file_version}"
if [[ "$version" != "$file_version" ]]; then
	echo "release: VERSION=$version, but the file VERSION says $file_version: change the file (and the changelog), run make generate, commit, then make release" >&2
	exit 1
fi
if [[ -n "$(git status --porcelain)" ]]; then
	echo "release: the tree has changes that are not committed (git status): a release is built from a commit" >&2
	exit 1
fi
commit="$(git rev-parse HEAD)"
epoch="$(git log -1 --format=%ct HEAD)"
if ! grep -q "^## \[$version\] - " CHANGELOG.md; then
	echo "release: note: CHANGELOG.md has no section for $version yet; this is a build of $commit, not a release cut (docs/upgrading.md#cutting-a-release)" >&2
fi

tmp="$(mktemp -d)"
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/release" ./hack/release

case "${1:-}" in
build)
	"$tmp/release" --version "$version" --commit "$commit" --epoch "$epoch" --out dist
	;;
check)
	start=$SECONDS
	"$tmp/release" --version "$version" --commit "$commit" --epoch "$epoch" --out dist
	echo "[release-check] the first build took $((SECONDS - start))s; the second, from a copy of $commit elsewhere" >&2
	mkdir "$tmp/src"
	git archive HEAD | tar -x -C "$tmp/src"
	cache=()
	[[ -n "${SHARED_CACHE:-}" ]] || cache=(GOCACHE="$tmp/gocache")
	start=$SECONDS
	(cd "$tmp/src" && env "${cache[@]}" "$tmp/release" --version "$version" --commit "$commit" --epoch "$epoch" --out "$tmp/dist")
	echo "[release-check] the second build took $((SECONDS - start))s$([[ -n "${SHARED_CACHE:-}" ]] && echo ' (shared build cache)' || echo ' (empty build cache)')" >&2
	"$tmp/release" compare "dist/$version" "$tmp/dist/$version"
	;;
*)
	echo "usage: hack/release.sh build|check" >&2
	exit 2
	;;
esac
