#!/bin/sh
# Publishes its first argument as the property `greeting`.
set -e
gspc-property set greeting "$1 from $DDS_TASK_PATH"
