# make bench's ai rows (issue 21), from the BENCHAI lines of
# tests/bench/vm-ai.sh, slurped as $ai. Every figure is a median with its
# min-max and the number of runs; ratios are per repeat (same rep, same
# boot): fxio ÷ pread for the KV trace, method ÷ plain open().read() for
# model loads, fxio.save ÷ torch.save for saves (MiB/s: > 1 is faster).
def spread: map(select(. != null)) | sort |
	if length == 0 then null
	else {median: (if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end),
	      min: .[0], max: .[-1], n: length} end;
def r3: if . == null then null else (. * 1000 | round) / 1000 end;
def rounded: if . == null then null else map_values(if type == "number" then r3 else . end) end;
# ratio($all; sel; $ref): per run of this group, its MiB/s ÷ that of the
# run of method (or engine) $ref of the same repeat among $all | sel
def ratio($all; sel; $ref): [ .[] as $x | ($all[] | select(sel and .rep == $x.rep and (.method // .engine) == $ref) | .mibs) as $r
	| if $r > 0 then $x.mibs / $r else null end ] | spread | rounded;
if ($ai | length) == 0 then null else {
  kv: ($ai | map(select(.bench == "kv")) as $kv | $kv | group_by(.engine) | map({key: .[0].engine, value: {
      runs: length,
      requests: .[0].requests, lookups: .[0].lookups, block_kib: .[0].block_kib,
      capacity_blocks: .[0].capacity_blocks,
      hit_rate: (map(.hit_rate) | spread | rounded),
      mibs: (map(.mibs) | spread | rounded),
      get_p50_ms: (map(.get_ms.p50) | spread | rounded),
      get_p99_ms: (map(.get_ms.p99) | spread | rounded),
      put_p50_ms: (map(.put_ms.p50) | spread | rounded),
      put_p99_ms: (map(.put_ms.p99) | spread | rounded),
      ratio_to_pread: ratio($kv; true; "pread")}})
    | from_entries),
  model: ($ai | map(select(.bench == "model")) as $m | $m | group_by([.op, .method]) | map({key: "\(.[0].op) \(.[0].method)", value: {
      op: .[0].op, method: .[0].method, runs: length, bytes: .[0].bytes,
      mibs: (map(.mibs) | spread | rounded),
      seconds: (map(.seconds) | spread | rounded),
      ratio: (if .[0].op == "load" then ratio($m; .op == "load"; "plain") else ratio($m; .op == "save"; "torch.save") end),
      ratio_to: (if .[0].op == "load" then "plain" else "torch.save" end)}})
    | from_entries)
} end
