# Sourced by callgrind.sh and client-callgrind.sh: `counts PROFILE` prints the profile's total
# instructions and its calls to malloc — the `calls=` line after each call record whose callee
# (cfn) is malloc. Callgrind names a function once, as `(id) name` in an fn= or cfn= line, and
# later by `(id)` alone.
counts() {
  local total mallocs
  total=$(callgrind_annotate "$1" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
  mallocs=$(awk '
    function name(spec) {
      if (match(spec, /^\([0-9]+\) /)) { names[substr(spec, 2, RLENGTH - 3)] = substr(spec, RLENGTH + 1) }
      if (match(spec, /^\([0-9]+\)/)) { return names[substr(spec, 2, RLENGTH - 2)] }
      return spec
    }
    /^fn=/ { name(substr($0, 4)); next }
    /^cfn=/ { is_malloc = (name(substr($0, 5)) == "malloc"); next }
    /^calls=/ { if (is_malloc) { split($0, a, /[= ]/); sum += a[2] } is_malloc = 0 }
    END { print sum + 0 }' "$1")
  echo "$total $mallocs"
}
