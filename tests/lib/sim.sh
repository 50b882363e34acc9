# simulate PREFIX ARGS...: hgtrace simulate -o PREFIX ARGS (output in PREFIX.out); sets $off
# (the true attach -s value) and $pids (the vCPU threads). Needs $HGTRACE.
simulate() {
	local p=$1
	shift
	"$HGTRACE" simulate -o "$p" "$@" > "$p.out" || return 1
	off=$(sed -n 's/.*attach with -s \(.*\))/\1/p' "$p.out")
	pids=$(grep '^vcpus:' "$p.out" | grep -o 'pid[0-9]*' | tr -d pid | tr '\n' ' ')
}
