#!/bin/bash
# Runs in the lab VM: exit with the status given as the first argument, after
# checking that arguments with spaces arrive intact.
[ "$2" = "two words" ] || { echo "argument 2 was '$2'"; exit 99; }
echo "exiting with $1"
exit "$1"
