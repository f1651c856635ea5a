#!/bin/bash
# Runs in the lab VM: io-error.sh (passed with --file), with its kernel log
# line allowed; the lab must pass the run.
# lab-allow: I/O error, dev nullb0, sector 0
. /lab/files/io-error.sh
