# The flight soaks' disk check (bench/flight-soak.sh, flight-soak-listen.sh). Input: one
# line a second, "T APPARENT USED": the time (s), the recording's files' apparent size
# (bytes: every page ever written to them) and the blocks they hold on disk (KB). -v K=S:
# the span the flight recorder keeps plus one tick (it punches once a tick, so just before
# a punch the disk may hold that much). For each sample: the pages written in the K s
# before it (apparent size now less that of the last sample at least K s older; 0 before
# the first), against what the disk held. Prints "USED_MB SPAN_MB RATIO N" at the sample
# where the disk held most over that span (RATIO = span / held, the smallest; > 1: under
# the span), of N samples with more than 64 MB held.
{
	t[n] = $1; a[n] = $2; u[n] = $3 * 1024; n++
}
END {
	worst = -1; j = -1
	for (i = 0; i < n; i++) {
		while (j + 1 < i && t[j + 1] <= t[i] - K)
			j++
		span = a[i] - (j >= 0 ? a[j] : 0)
		if (u[i] < 64e6)
			continue
		m++
		r = span / u[i]
		if (worst < 0 || r < worst) {
			worst = r; wu = u[i]; ws = span
		}
	}
	if (worst < 0)
		print "- - 0 0"
	else
		printf "%.1f %.1f %.3f %d\n", wu / 1e6, ws / 1e6, worst, m
}
