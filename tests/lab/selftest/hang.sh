#!/bin/bash
# Runs in the lab VM: never finishes, for the timeout self-test.
echo "hanging"
sleep 100000
