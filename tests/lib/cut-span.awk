# The span in which every CPU of a host recording has records, from trace-cmd's report of
# it (`report -t HOST`): the latest first record and the earliest last record over its
# CPUs, as "FROM TO" in the report's stamps without their dot (runwindows.awk's from, to).
# A recording cut by a kill has each CPU's pages end where the kill found them: outside
# this span some CPU's records are missing, and a vCPU thread may have run there unseen.
{
	if (!match($0, /-[0-9]+ +\[[0-9]+\] *[0-9.]+: +[a-z_]+:/)) next
	split(substr($0, RSTART, RLENGTH), f, /[][ :]+/)
	cpu = f[2] + 0; ts = f[3]; gsub(/\./, "", ts)
	if (!(cpu in first)) first[cpu] = ts
	last[cpu] = ts
}
END {
	for (c in first) {
		if (lo == "" || first[c] + 0 > lo + 0) lo = first[c]
		if (hi == "" || last[c] + 0 < hi + 0) hi = last[c]
	}
	print lo, hi
}
