#!/bin/bash
# Runs in the lab VM: never finishes, for the timeout self-test. Logs an
# info-level kernel message first: the host must still show it after the kill.
echo "<6>fxlab-selftest: kernel message before the hang" > /dev/kmsg
echo "hanging"
sleep 100000
