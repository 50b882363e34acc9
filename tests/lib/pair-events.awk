# The events two files of one kernel both hold, paired: per CPU and event text, in order,
# the raw times within 20 us. Inputs: HOST (trace-cmd report --raw-ts), GUEST (the same),
# GUEST-CORRECTED (trace-cmd report -t: its times after the TIME_SHIFT), each without its
# "cpus=" line. -v b=BOUND (ns). Both files' clocks are one kernel's, so the truth of the
# offset is 0: what is checked of a paired guest event is the correction trace-cmd applied
# to it (corrected minus raw time), not its distance to the host's copy, which also holds the
# kernel's time between the two instances' writes of the event (an interrupt there makes it
# tens of us on a busy machine, whatever the sync). Prints: pairs, pairs whose correction is
# more than BOUND from 0 (or without a corrected time), guest events, the largest such
# correction, the largest raw skew.

# @line -> f["cpu"], f["ts"] (ns), f["text"] (what follows the time)
function split_line(line, f,  r, t, q) {
	r = index(line, "["); line = substr(line, r + 1); r = index(line, "]")
	f["cpu"] = substr(line, 1, r - 1); line = substr(line, r + 1)
	r = index(line, ": "); t = substr(line, 1, r - 1); gsub(/ /, "", t)
	if (index(t, ".")) { split(t, q, "."); t = q[1] * 1000000000 + q[2] }
	f["ts"] = t + 0; f["text"] = substr(line, r + 2)
}
FILENAME == ARGV[1] { split_line($0, f); k = f["cpu"] SUBSEP f["text"]; hts[k, hn[k]++] = f["ts"]; next }
FILENAME == ARGV[2] { split_line($0, f); k = f["cpu"] SUBSEP f["text"]; graw[k, gn[k]++] = f["ts"]; next }
{ split_line($0, f); k = f["cpu"] SUBSEP f["text"]; gcor[k, cn[k]++] = f["ts"] }
END {
	for (k in gn) {
		ng += gn[k]; i = 0
		for (j = 0; j < gn[k]; j++) {
			g = graw[k, j]
			while (i < hn[k] && hts[k, i] < g - 20000) i++
			if (i >= hn[k] || hts[k, i] > g + 20000) continue
			m++; d = g - hts[k, i]; if (d < 0) d = -d; if (d > sk) sk = d
			# no corrected line (trace-cmd could not correct the file): far, at any bound
			if (!((k, j) in gcor)) { far++; i++; continue }
			e = gcor[k, j] - g; if (e < 0) e = -e
			if (e > w) w = e; if (e > b) far++
			i++
		}
	}
	print m + 0, far + 0, ng + 0, w + 0, sk + 0
}
