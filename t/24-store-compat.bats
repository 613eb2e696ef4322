#!/usr/bin/env bats
# 24-store-compat.bats - the store's files against upstream's own Go code
# (SPEC.md 4.1, share/doc/store.md "Compatibility with upstream"):
# - the writer's bytes are json.MarshalIndent's: t/fixtures/go/gen.go
#   (upstream's record types) wrote health-escapes.json with Debian's
#   golang-go 1.19; vfsentinel's writer must write the same bytes for the
#   same records. With go installed the fixture is regenerated too.
# - the loader agrees with upstream's on the hand-edited files below, or
#   differs where store.md says so; each case is kept here.

load helpers
load lib/store

GO_FIX=$VFS_ROOT/t/fixtures/go
VF=0000:e3:00.4
Q=2026-08-20T15:00:31Z

setup() {
	vfs_setup
	store_setup
}

# rewrite KIND FILE: the store's loader then its writer, into $T/out.
rewrite() {
	store-rewrite "$1" "$2" >"$T/out"
}

# health_with_quarantine TIMESTAMP-JSON: a file of one quarantined record.
health_with_quarantine() {
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","quarantined_at":'"$1"'}]}'
}

# unavailable REASON: vfstore check exits 69 with exactly that reason,
# after the file's name.
unavailable() {
	run -69 --separate-stderr vs check
	assert_equal "$(jq -r .reason <<<"$output")" "$HEALTH: $1"
}

# same_reason BAD REPEATED: the file REPEATED (where a key repeats after
# the value of BAD) is refused with the reason of BAD, where that value
# stands alone: upstream's decoder keeps the first error of a repeated
# key's values, whichever comes last.
same_reason() {
	local want
	put_health "$1"
	run -69 --separate-stderr vs check
	want=$(jq -r .reason <<<"$output")
	put_health "$2"
	run -69 --separate-stderr vs check
	assert_equal "$(jq -r .reason <<<"$output")" "$want"
}

# loads N: vfstore check exits 0 and counts N records.
loads() {
	run -0 --separate-stderr vs check
	assert_equal "$(jq -r .records <<<"$output")" "$1"
}

@test "the writer writes Go's bytes for every byte class (<>& as \\u003c..., U+2028/9 escaped, \\u0008 \\u000c, DEL raw)" {
	T=$BATS_TEST_TMPDIR
	run -0 rewrite health "$GO_FIX/health-escapes.json"
	run -0 cmp "$T/out" "$GO_FIX/health-escapes.json"
	run -0 grep -c -F '\u003cscript\u003e\u0026amp;' "$T/out"
	assert_output 2
	run -0 grep -c -F 'line\u2028para\u2029end' "$T/out"
	assert_output 2
	run -0 grep -c -F '\u0007\u0008\t\n\u000b\u000c\r' "$T/out"
	assert_output 1
	run -0 grep -c -F $'z{|}~\x7f"' "$T/out"
	assert_output 1
}

@test "vfstore rewrites upstream's file byte for byte (a report on another VF leaves the records as Go wrote them)" {
	set_threshold 10
	put_health @../go/health-escapes.json
	run -0 --separate-stderr vs report-failure --vf 0000:e3:00.7 \
	    --instance i-1 --assigned-at a-1
	run -0 --separate-stderr vs clear --vf 0000:e3:00.7
	run -0 cmp "$HEALTH" "$GO_FIX/health-escapes.json"
}

@test "gen.go, run by the installed go, still writes the committed fixture" {
	command -v go >/dev/null || skip "go is not installed (Debian: golang-go)"
	T=$BATS_TEST_TMPDIR
	cd "$GO_FIX"
	run -0 env GOCACHE="$T/gocache" GOPATH="$T/gopath" GO111MODULE=off \
	    GOFLAGS= sh -c 'go run gen.go >"$1"' _ "$T/go.json"
	run -0 cmp "$T/go.json" "$GO_FIX/health-escapes.json"
}

@test "the claims writer escapes as Go does too" {
	T=$BATS_TEST_TMPDIR
	printf '%s' '{"version":1,"claims":[{"vf_address":"'$VF'","instance_id":"<a&b>\b\f\u007f","claimed_at":"x\u2028y","profile":"\u2029"}]}' >"$T/in"
	run -0 rewrite claims "$T/in"
	run -0 cat "$T/out"
	assert_line -n 5 '      "instance_id": "\u003ca\u0026b\u003e\u0008\u000c'$'\x7f''",'
	assert_line -n 6 '      "claimed_at": "x\u2028y",'
	assert_line -n 7 '      "profile": "\u2029"'
}

# --- the loader: agreeing with upstream ---------------------------------

@test "like upstream: a repeated records (or version) key, the last one counts" {
	put_health '{"version":2,"version":1,"records":[],"records":[{"vf_address":"'$VF'","quarantined_at":"'$Q'"}]}'
	loads 1
}

@test "like upstream: a key repeated after a value upstream cannot decode is refused (records {} then [...])" {
	R='{"vf_address":"'$VF'","quarantined_at":"'$Q'"}'
	put_health '{"version":1,"records":{},"records":['"$R"']}'
	unavailable 'unmarshal VF health state: json: cannot unmarshal object into field "records" of type array'
	put_health '{"version":"1","version":1,"records":[]}'
	unavailable 'unmarshal VF health state: json: cannot unmarshal string into field "version" of type int'
	same_reason '{"version":1,"records":[{"vf_address":"'$VF'","quarantined_at":5}]}' \
	    '{"version":1,"records":[{"vf_address":"'$VF'","quarantined_at":5,"quarantined_at":"'$Q'"}]}'
	same_reason '{"version":1,"records":[{"vf_address":"'$VF'","quarantined_at":"yesterday"}]}' \
	    '{"version":1,"records":[{"vf_address":"'$VF'","quarantined_at":"yesterday","quarantined_at":"'$Q'"}]}'
	same_reason '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"reported_at":"'$Q'","instance_id":[]}]}]}' \
	    '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"reported_at":"'$Q'","instance_id":[]}],"failures":[],"quarantined_at":"'$Q'"}]}'
	same_reason '{"version":1,"records":[5]}' \
	    '{"version":1,"records":[5],"records":['"$R"']}'
}

@test "differs, and says so: a key repeated where upstream would merge or keep the values is refused" {
	R='{"vf_address":"'$VF'","quarantined_at":"'$Q'"}'
	# Go decodes the second array into the elements of the first: the
	# record would keep the first one's quarantine.
	put_health '{"version":1,"records":['"$R"'],"records":[{"vf_address":"'$VF'","failures":[{"reported_at":"'$Q'"}]}]}'
	unavailable 'unmarshal VF health state: key "records" repeats after a non-empty array (upstream merges the two; vfsentinel refuses)'
	# Go keeps a string when null follows.
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"instance_id":"a","instance_id":null,"reported_at":"'$Q'"}]}]}'
	unavailable 'unmarshal VF health state: key "instance_id" repeats as null after a value (upstream keeps the value; vfsentinel refuses)'
	# An empty array or null first, then the value: the last one counts.
	put_health '{"version":1,"records":[],"records":null,"records":['"$R"']}'
	loads 1
}

@test "like upstream: a JSON escape in a timestamp is refused (Go parses the raw bytes)" {
	health_with_quarantine '"2026-08-20T15:00:31\u005a"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20T15:00:31\u005a": a JSON escape in a timestamp (upstream parses the raw bytes)'
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"instance_id":"\u0061","reported_at":"2026\u002d08-20T15:00:31Z"}]}]}'
	unavailable 'unmarshal VF health state: parsing time "2026\u002d08-20T15:00:31Z": a JSON escape in a timestamp (upstream parses the raw bytes)'
	# An escape anywhere else is read, as upstream reads it.
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"instance_id":"\u0061\/","reported_at":"'$Q'"}]}]}'
	loads 1
}

@test "like upstream: a lowercase t or z in a timestamp is refused" {
	health_with_quarantine '"2026-08-20t15:00:31Z"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20t15:00:31Z": not an RFC 3339 timestamp'
	health_with_quarantine '"2026-08-20T15:00:31z"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20T15:00:31z": not an RFC 3339 timestamp'
	health_with_quarantine '"2026-08-20T15:00:31+02:00"'
	loads 1
}

@test "like upstream: 10 or more fraction digits are cut to nanoseconds, a ',' fraction is read" {
	T=$BATS_TEST_TMPDIR
	health_with_quarantine '"2026-08-20T15:00:31.1234567891999Z"'
	loads 1
	run -0 rewrite health "$HEALTH"
	run -0 jq -r '.records[0].quarantined_at' "$T/out"
	assert_output 2026-08-20T15:00:31.123456789Z
	health_with_quarantine '"2026-08-20T15:00:31,5+01:00"'
	loads 1
	run -0 rewrite health "$HEALTH"
	run -0 jq -r '.records[0].quarantined_at' "$T/out"
	assert_output 2026-08-20T14:00:31.5Z
	health_with_quarantine '"2026-08-20T15:00:31,Z"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20T15:00:31,Z": not an RFC 3339 timestamp'
	health_with_quarantine '"2026-08-20T15:00:31.5"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20T15:00:31.5": not an RFC 3339 timestamp'
}

# --- the loader: differences store.md states ----------------------------

@test "differs, and says so: keys match exactly (upstream folds case: Version, RECORDS, VF_Address)" {
	put_health '{"VERSION":1,"records":[]}'
	unavailable 'unmarshal VF health state: key "VERSION" is "version" in another case (upstream folds the case of keys; vfsentinel reads exact keys only)'
	put_health '{"version":1,"Records":[]}'
	unavailable 'unmarshal VF health state: key "Records" is "records" in another case (upstream folds the case of keys; vfsentinel reads exact keys only)'
	put_health '{"version":1,"records":[{"VF_Address":"'$VF'","quarantined_at":"'$Q'"}]}'
	unavailable 'unmarshal VF health state: key "VF_Address" is "vf_address" in another case (upstream folds the case of keys; vfsentinel reads exact keys only)'
	# Not only where a field is then missing: a record whose quarantine
	# only upstream would see.
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"reported_at":"'$Q'"}],"Quarantined_At":"'$Q'"}]}'
	unavailable 'unmarshal VF health state: key "Quarantined_At" is "quarantined_at" in another case (upstream folds the case of keys; vfsentinel reads exact keys only)'
	# Go folds the Kelvin sign and the long s too.
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"reported_at":"'$Q'","in\u017ftance_id":"a"}]}]}'
	unavailable $'unmarshal VF health state: key "in\u017ftance_id" is "instance_id" in another case (upstream folds the case of keys; vfsentinel reads exact keys only)'
}

@test "differs: an unknown field must still be JSON jansson holds (no 1e999, no 30-digit integer, 2048 levels at most)" {
	put_health '{"version":1,"x":1e999,"records":[]}'
	unavailable "unmarshal VF health state: real number overflow near '1e999'"
	put_health '{"version":1,"x":123456789012345678901234567890,"records":[]}'
	unavailable 'unmarshal VF health state: too big integer'
	put_health "{\"version\":1,\"x\":$(printf '%.0s[' {1..2047})$(printf '%.0s]' {1..2047}),\"records\":[]}"
	loads 0
	put_health "{\"version\":1,\"x\":$(printf '%.0s[' {1..2048})$(printf '%.0s]' {1..2048}),\"records\":[]}"
	unavailable "unmarshal VF health state: maximum parsing depth reached near '['"
	put_health '{"version":1,"x":{"y":[1.5,"z",null,true,12345678901234567]},"records":[]}'
	loads 0
}

@test "differs, and says so: a lone surrogate, invalid UTF-8 or \\u0000 is refused (upstream reads U+FFFD, or the NUL)" {
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"instance_id":"a\ud800b","reported_at":"'$Q'"}]}]}'
	unavailable "unmarshal VF health state: a lone surrogate in a string (upstream reads U+FFFD): invalid Unicode '\\uD800' near '\"a\\ud800b\"'"
	put_health $'{"version":1,"records":[{"vf_address":"'$VF$'","failures":[{"instance_id":"a\xffb","reported_at":"'$Q$'"}]}]}'
	unavailable "unmarshal VF health state: invalid UTF-8 (upstream reads U+FFFD): unable to decode byte 0xff near '\"a'"
	put_health '{"version":1,"records":[{"vf_address":"'$VF'","failures":[{"instance_id":"a\u0000b","reported_at":"'$Q'"}]}]}'
	unavailable "unmarshal VF health state: a \\u0000 (NUL) in a string (upstream reads it; vfsentinel stores no NUL) near '\"a\\u0000b\"'"
}

@test "differs, and says so: a one-digit hour or an offset out of range in a timestamp (upstream's Go 1.19 reads both)" {
	health_with_quarantine '"2026-08-20T5:00:31Z"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20T5:00:31Z": the hour has one digit (upstream reads it; vfsentinel wants two)'
	health_with_quarantine '"2026-08-20T15:00:31+24:00"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20T15:00:31+24:00": offset out of range (upstream reads it; vfsentinel wants -23:59 to +23:59)'
	health_with_quarantine '"2026-08-20T15:00:31-02:60"'
	unavailable 'unmarshal VF health state: parsing time "2026-08-20T15:00:31-02:60": offset out of range (upstream reads it; vfsentinel wants -23:59 to +23:59)'
}
