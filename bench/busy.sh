#!/usr/bin/env bash
# The whole machine's CPU seconds, busy and idle, while a command runs (from /proc/stat), and its wall
# time: `bash bench/busy.sh make test`. On CI's two cores, busy / 2 is the least wall time a run of
# that work can take; idle is what the run left unused. Exits with the command's status.
set -uo pipefail
read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
busy0=$((user + nice + system + irq + softirq + steal)) idle0=$((idle + iowait)) t0=$EPOCHREALTIME
"$@"
status=$?
read -r _ user nice system idle iowait irq softirq steal _ </proc/stat
hz=$(getconf CLK_TCK)
awk -v b=$((user + nice + system + irq + softirq + steal - busy0)) -v i=$((idle + iowait - idle0)) \
    -v hz="$hz" -v t0="$t0" -v t1="$EPOCHREALTIME" \
    'BEGIN { printf "busy %.0f s, idle %.0f s, wall %.1f s\n", b / hz, i / hz, t1 - t0 }' >&2
exit "$status"
