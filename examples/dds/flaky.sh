#!/bin/sh
# Fails the first time (no marker yet), succeeds the next.
out=${DDS_EXAMPLE_OUT:-.}
marker="$out/flaky.marker"
if [ -e "$marker" ]; then
  echo "run 2 of $DDS_TASK_PATH" >> "$marker"
  exit 0
fi
echo "run 1 of $DDS_TASK_PATH" > "$marker"
echo "flaky: first run, crashing on purpose" >&2
exit 1
