# The cost kinds' rows (tests/bench/run.sh, .cost of results.json): input
# results.json; per kind and workload the guest ns per I/O of every device
# (median over the repeats; under icount the repeats are identical), per
# MiB, the cost each stacked device adds over one member alone, and fxN's
# ratios to dm-stripe and md raid0.
def median: map(select(. != null)) | sort |
	if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def r1: if . == null then null else (. * 10 | round) / 10 end;
def r4: if . == null then null else (. * 10000 | round) / 10000 end;
def q($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b | r4 end;
def order: {"randread-4k-qd1": 0, "randread-4k-qd32": 1, "randwrite-4k-qd1": 2, "randwrite-4k-qd32": 3,
	"randread-128k-qd8": 4, "seqread-1m-qd8": 5, "seqwrite-1m-qd8": 6, "xread-512k-qd8": 7,
	"xread-512k-j16-uring": 8, "flush-write-4k-qd1": 9, "discard-1m-qd1": 10}[.workload] // 99;
[ .samples[] | select((.kind | startswith("cost")) and .error == null and (.ns_per_io // 0) > 0) ]
| group_by([.kind, .wl]) | map(
	.[0] as $h
	| (group_by(.dev) | map({key: .[0].dev, value: {
		ns_per_io: (map(.ns_per_io) | median | r1),
		ns_per_mib: (map(.ns_per_io * 1048576 / (.bytes / .ios)) | median | r1),
		idle_frac_max: (map(.idle_frac // 0) | max | r4),
		n: length}}) | from_entries) as $d
	| ([ "fx", "dm", "md", "jbod" ] | map(select($d[.] != null and $d.single != null)
		| {key: ., value: ($d[.].ns_per_io - $d.single.ns_per_io | r1)}) | from_entries) as $add
	| {kind: $h.kind, workload: $h.wl, jobs: $h.jobs, qd: $h.qd, bytes_per_io: ($h.bytes / $h.ios | round),
	   dev: $d, added_ns_over_single: $add,
	   ratios: {"fx/dm": q($d.fx.ns_per_io; $d.dm.ns_per_io), "fx/md": q($d.fx.ns_per_io; $d.md.ns_per_io),
		"fx/single": q($d.fx.ns_per_io; $d.single.ns_per_io),
		"fx_added/dm_added": q($add.fx; $add.dm), "fx_added/md_added": q($add.fx; $add.md)}})
| sort_by(.kind, order)
