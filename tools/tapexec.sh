#!/bin/sh
# tapexec.sh FILE - how prove runs one test file: bats files through
# bats --tap, anything else (the C unit tests) directly.
case "$1" in
*.bats) exec bats --tap "$1" ;;
*) exec "$1" ;;
esac
