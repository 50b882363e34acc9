# Option sets of the conformance-data test, by index (expected/FILE.INDEX.txt).
DATA_OPTS=("" "-t" "-N" "-R" "--cpu 1" "-F sched_switch" "--ts-diff" "--stat" "--first-event"
	"--last-event")
