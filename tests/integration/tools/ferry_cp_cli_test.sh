#!/usr/bin/env bash
# The command lines of ferry-cp and ferry-walk as a user types them: help,
# version, both option spellings, usage errors, the AWS CLI's S3 flags,
# --json on a failed run, and '-' as stdin / stdout (against the
# peer_versitygw fixture's versitygw).
#   ferry_cp_cli_test.sh PATH/TO/ferry-cp PATH/TO/ferry-walk
set -uo pipefail
CP=${1:?usage: ferry_cp_cli_test.sh FERRY_CP FERRY_WALK}
WALK=${2:?}
source "$(dirname "$0")/lib.sh" ferry-cp-cli
BUCKET=s3://ferry-cp-cli-$$
ENDPOINT=$AWS_ENDPOINT_URL

# --help and -h: every flag described, on stdout, exit 0.
for tool in "$CP" "$WALK"; do
  for h in --help -h; do
    out=$("$tool" "$h" 2>/dev/null); rc=$?
    name=${tool##*/}
    if [ $rc -eq 0 ] && [[ $out == *--json* ]] && [[ $out == *--endpoint-url* ]] &&
       [[ $out == *--timeout* ]]; then pass "${name}${h}PrintsEveryFlagOnStdout"
    else fail "${name}${h}PrintsEveryFlagOnStdout" "rc=$rc out=$out"; fi
  done
done
out=$("$CP" --help)
missing=""
for f in -r --jobs --chunk-mib --concurrency --parallelism --memory-mib --idle-buffer-mib \
         --range --make-bucket --progress --quiet --profile --region --no-sign-request; do
  [[ $out == *"$f"* ]] || missing+=" $f"
done
if [ -z "$missing" ]; then pass CpHelpNamesEveryFlag
else fail CpHelpNamesEveryFlag "missing:$missing"; fi

# --version: the tool's name and the project's version.
out=$("$CP" --version); rc=$?
if [ $rc -eq 0 ] && [[ $out =~ ^ferry-cp\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then pass CpVersionPrintsNameAndVersion
else fail CpVersionPrintsNameAndVersion "rc=$rc out=$out"; fi
out=$("$WALK" --version); rc=$?
if [ $rc -eq 0 ] && [[ $out =~ ^ferry-walk\ [0-9]+\.[0-9]+\.[0-9]+$ ]]; then pass WalkVersionPrintsNameAndVersion
else fail WalkVersionPrintsNameAndVersion "rc=$rc out=$out"; fi

# "--jobs 4" and "--jobs=4" are one option.
head -c 100000 /dev/urandom >"$WORK/small.bin"
if "$CP" --quiet --jobs 4 "$WORK/small.bin" "$WORK/a.bin" &&
   "$CP" --quiet --jobs=4 "$WORK/small.bin" "$WORK/b.bin" &&
   cmp -s "$WORK/small.bin" "$WORK/a.bin" && cmp -s "$WORK/small.bin" "$WORK/b.bin"; then
  pass OptionValueWithSpaceOrEqualsSign
else fail OptionValueWithSpaceOrEqualsSign "a copy failed"; fi

# A usage error: exit 2, one line naming the flag.
err=$("$CP" --jobs=0 "$WORK/small.bin" "$WORK/c.bin" 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $err == *--jobs* ]] && [ "$(wc -l <<<"$err")" -eq 1 ] && [ ! -e "$WORK/c.bin" ]; then
  pass BadValueIsAOneLineUsageErrorNamingTheFlag
else fail BadValueIsAOneLineUsageErrorNamingTheFlag "rc=$rc err=$err"; fi
err=$("$CP" --frobnicate "$WORK/small.bin" "$WORK/c.bin" 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $err == *--frobnicate* ]]; then pass UnknownOptionIsAUsageError
else fail UnknownOptionIsAUsageError "rc=$rc err=$err"; fi
err=$("$WALK" --in-flight=x "$WORK" 2>&1); rc=$?
if [ $rc -eq 2 ] && [[ $err == *--in-flight* ]]; then pass WalkBadValueIsAUsageError
else fail WalkBadValueIsAUsageError "rc=$rc err=$err"; fi
# --no-sign-request sends anonymous requests: versitygw's private bucket
# refuses them, and the error says the request was unsigned.
"$CP" --quiet --make-bucket "$WORK/small.bin" "$BUCKET/private.bin" >/dev/null 2>&1
err=$("$CP" --quiet --no-sign-request "$BUCKET/private.bin" "$WORK/c.bin" 2>&1); rc=$?
if [ $rc -eq 1 ] && [[ $err == *unsigned* ]] && [ ! -e "$WORK/c.bin" ]; then pass NoSignRequestSendsUnsignedRequests
else fail NoSignRequestSendsUnsignedRequests "rc=$rc err=$err"; fi

# --endpoint-url beats the environment's endpoint, as the AWS CLI's does.
if AWS_ENDPOINT_URL=http://127.0.0.1:1 "$CP" --quiet --make-bucket --endpoint-url "$ENDPOINT" \
     "$WORK/small.bin" "$BUCKET/small.bin" &&
   AWS_ENDPOINT_URL=http://127.0.0.1:1 "$WALK" --endpoint-url="$ENDPOINT" "$BUCKET/" >/dev/null; then
  pass EndpointUrlFlagOverridesTheEnvironment
else fail EndpointUrlFlagOverridesTheEnvironment "copy or walk failed"; fi

# --region and --profile reach the S3 configuration (a profile that does
# not exist is an error naming it).
err=$("$CP" --quiet --profile no-such-profile-$$ "$BUCKET/small.bin" "$WORK/d.bin" 2>&1); rc=$?
if [ $rc -ne 0 ] && [[ $err == *no-such-profile-$$* ]]; then pass ProfileFlagIsAwsProfile
else fail ProfileFlagIsAwsProfile "rc=$rc err=$err"; fi
if "$CP" --quiet --region us-east-1 "$BUCKET/small.bin" "$WORK/e.bin" && cmp -s "$WORK/small.bin" "$WORK/e.bin"; then
  pass RegionFlagIsAccepted
else fail RegionFlagIsAccepted "copy failed"; fi

# --json on a run that fails as a whole: one error object on stdout, the
# message on stderr, the exit status as without --json.
out=$("$CP" --json "$WORK/no-such-file" "$WORK/f.bin" 2>"$WORK/err"); rc=$?
if [ $rc -eq 1 ] && [ "$(jq -r .error.code <<<"$out")" = NOT_FOUND ] &&
   [[ $(jq -r .error.message <<<"$out") == *no-such-file* ]] && [ -s "$WORK/err" ]; then
  pass CpJsonFailurePrintsAnErrorObject
else fail CpJsonFailurePrintsAnErrorObject "rc=$rc out=$out"; fi
out=$("$CP" --json "$WORK/small.bin" "bogus://x/y" 2>/dev/null); rc=$?
if [ $rc -eq 2 ] && [ "$(jq -r .error.code <<<"$out")" = INVALID_ARGUMENT ]; then
  pass CpJsonBadUrlPrintsAnErrorObject
else fail CpJsonBadUrlPrintsAnErrorObject "rc=$rc out=$out"; fi
out=$("$WALK" --json "$WORK/no-such-dir" 2>/dev/null); rc=$?
if [ $rc -eq 2 ] && [ "$(jq -r .error.code <<<"$out")" = NOT_FOUND ]; then
  pass WalkJsonFailurePrintsAnErrorObject
else fail WalkJsonFailurePrintsAnErrorObject "rc=$rc out=$out"; fi

# '-' as DST is stdout (no file named '-'); --json's summary then goes to stderr.
head -c $((11 << 20 | 777)) /dev/urandom >"$WORK/big.bin"
"$CP" --quiet "$WORK/big.bin" "$BUCKET/big.bin"
(cd "$WORK" && "$CP" --json "$BUCKET/big.bin" - >"$WORK/out.bin" 2>"$WORK/summary"); rc=$?
if [ $rc -eq 0 ] && cmp -s "$WORK/big.bin" "$WORK/out.bin" && [ ! -e "$WORK/-" ] &&
   [ "$(jq -r .files <"$WORK/summary")" = 1 ]; then pass DashAsDestinationIsStdout
else fail DashAsDestinationIsStdout "rc=$rc summary=$(cat "$WORK/summary")"; fi

# '-' as SRC is stdin, streamed (of unknown size) as a multipart upload.
head -c $((19 << 20 | 4321)) /dev/urandom >"$WORK/stream.bin"
out=$(cat "$WORK/stream.bin" | "$CP" --json - "$BUCKET/stream.bin"); rc=$?
if [ $rc -eq 0 ] && "$CP" --quiet "$BUCKET/stream.bin" "$WORK/stream.back" &&
   cmp -s "$WORK/stream.bin" "$WORK/stream.back" && [ "$(jq -r .parts <<<"$out")" -gt 1 ]; then
  pass DashAsSourceIsStdinStreamedAsMultipart
else fail DashAsSourceIsStdinStreamedAsMultipart "rc=$rc out=$out"; fi
if printf 'hello\n' | "$CP" --quiet - "$WORK/local/hello.txt" && [ "$(cat "$WORK/local/hello.txt")" = hello ]; then
  pass DashAsSourceWritesALocalFile
else fail DashAsSourceWritesALocalFile "no $WORK/local/hello.txt"; fi

finish
