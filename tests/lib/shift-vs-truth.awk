# The stored TIME_SHIFT (the last one trace-cmd dump --options prints, read first as
# "dump") against the simulator's truth (hgtrace simulate --truth, read second): each
# guest event's host time from its CPU's samples, interpolated as trace-cmd interpolates
# them (the pair at or before the event, kept off the end), minus the true host time.
# Prints "N events, M beyond +-BOUND, worst W" (-v bound=BOUND).
FNR == 1 { file++ }
file == 1 && /Option TimeShift/ { nc = 0; ns = 0; delete cnt; delete t; delete o; next }
file == 1 && /\[samples count for CPU/ { cnt[nc++] = $1; next }
file == 1 && /\[offset \* scaling/ {
	# "OFFSET SCALING FRAC TIME[offset ...": the CPU is the one whose count is not yet met
	split($4, a, "[")
	c = 0; k = ns
	while (c < nc && k >= cnt[c]) { k -= cnt[c]; c++ }
	o[c, k] = $1; t[c, k] = a[1]; ns++
	next
}
file == 2 && /^#/ { next }
file == 2 {
	c = $1; g = $2; h = $3
	n = cnt[c]
	if (n == 1) off = o[c, 0]
	else {
		i = 0
		while (i + 1 < n && t[c, i + 1] <= g) i++
		if (i > n - 2) i = n - 2
		off = o[c, i] + (g - t[c, i]) * (o[c, i + 1] - o[c, i]) / (t[c, i + 1] - t[c, i])
	}
	d = g + off - h; if (d < 0) d = -d
	if (d > bound) bad++
	if (d > worst) worst = d
	all++
}
END { printf "%d events, %d beyond +-%s, worst %.0f\n", all, bad + 0, bound, worst }
