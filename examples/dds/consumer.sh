#!/bin/sh
# Waits for the property `greeting` and writes it, the asset's content and its DDS variables
# to $DDS_EXAMPLE_OUT/consumer_<index>.txt.
set -e
out=${DDS_EXAMPLE_OUT:-.}
value=$(gspc-property wait greeting --timeout 60)
{
  echo "greeting: $value"
  echo "asset: $(cat greeting_format)"
  echo "task: $DDS_TASK_PATH index $DDS_TASK_INDEX of group $DDS_GROUP_NAME (argument $1)"
} > "$out/consumer_$1.txt"
