# make bench's peer rows (issue 8), from the lines of tests/bench/vm-peer.sh
# (BENCHPEER) and tests/bench/vm-p2p.sh (BENCHP2P), slurped as $peer and $p2p.
# Every figure is a median with its min-max and the number of repeats.
def spread: map(select(. != null)) | sort |
	if length == 0 then null
	else {median: (if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end),
	      min: .[0], max: .[-1], n: length} end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def rounded: if . == null then null else map_values(if type == "number" then r3 else . end) end;
{
  libfxio: (if ($peer | length) == 0 then null else
    ($peer | group_by(.path) | map({key: .[0].path, value: {
      ran: (map(.ran) | all),
      reason: (map(.reason) | map(select(. != null and . != "")) | unique | join("; ")),
      mibs: (map(.mibs) | spread | rounded),
      ratio_to_posix: (map(.ratio_to_posix) | spread | rounded),
      overlapped_slots: (map(.overlapped_slots) | add),
      cpu_s_per_gib: (map(.cpu_s_per_gib) | spread | rounded),
      peerq_bytes: (map(.peerq_bytes // 0) | add)}}) | from_entries) end),
  p2pdma: (if ($p2p | length) == 0 then null else
    ($p2p | group_by(.dev) | map(. as $g | {key: .[0].dev, value: {
      p2pdma_mibs: ($g | map(select(.mem == "p2pdma") | .mibs) | spread | rounded),
      host_mibs: ($g | map(select(.mem == "host") | .mibs) | spread | rounded),
      # per repeat: P2PDMA memory / host memory on the same device
      ratio_p2pdma_to_host: ([ $g[] | select(.mem == "p2pdma") | . as $p |
        ($g[] | select(.mem == "host" and .rep == $p.rep) | .mibs) as $h |
        if $h > 0 then $p.mibs / $h else null end ] | spread | rounded)}}) | from_entries) end)
}
