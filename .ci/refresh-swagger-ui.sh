#!/bin/sh
# Refresh the Swagger UI assets crcr serves at /docs (src/crcr/swagger_ui/), from the npm
# registry's swagger-ui-dist package at the version given (default: the pinned one).
# Usage: .ci/refresh-swagger-ui.sh [VERSION]; then run tests/web/test_api_docs.py and commit.
set -eu
version="${1:-$(cat "$(dirname "$0")/../src/crcr/swagger_ui/VERSION")}"
target="$(cd "$(dirname "$0")/.." && pwd)/src/crcr/swagger_ui"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "swagger-ui-dist@$version" >/dev/null && tar xzf ./*.tgz)
for file in swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE; do
    cp "$work/package/$file" "$target/$file"
done
# The source map is not shipped: drop the comment that would make devtools ask for it.
sed -i '/^\/\/# sourceMappingURL=/d' "$target/swagger-ui-bundle.js"
echo "$version" >"$target/VERSION"
echo "Swagger UI $version in $target"
