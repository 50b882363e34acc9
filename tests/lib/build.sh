# Compiling programs against the libraries of a build directory.

# sanitize_flags BUILD: "-fsanitize=..." when BUILD is a sanitized build (its libraries
# need programs linked with the same sanitizers), else nothing.
sanitize_flags() {
	local san
	san=$(meson introspect --buildoptions "$1" 2> /dev/null |
		python3 -c 'import json,sys; print(next((o["value"] for o in json.load(sys.stdin) if o["name"] == "b_sanitize"), "none"))')
	[ "$san" != none ] && [ -n "$san" ] && echo "-fsanitize=$san"
	return 0
}
