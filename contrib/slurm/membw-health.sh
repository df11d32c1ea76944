#!/bin/bash
# Slurm HealthCheckProgram: drain this node with membw's one line as the
# reason when its memory is unhealthy; log (and leave the node alone) when
# membw could not check. slurm.conf:
#   HealthCheckProgram=/etc/slurm/membw-health.sh
#   HealthCheckInterval=3600
#   HealthCheckNodeState=IDLE   # a busy node would measure the job
# MEMBW, MEMBW_BASELINE and MEMBW_BUDGET override the binary, the baseline
# and the budget (inside Slurm's 60 s limit).
membw=${MEMBW:-/usr/local/bin/membw}
baseline=${MEMBW_BASELINE:-/etc/membw/baseline.json}
# intel-cmt-cat's /usr/bin/membw (a bandwidth generator) exits 1 on any
# argument it does not know: never drain a node on its usage text.
case $("$membw" --version 2>/dev/null) in
  "membw "*) ;;
  *) logger -t membw-health "no verdict: $membw is not membw (its --version; intel-cmt-cat?)"; exit 0 ;;
esac
# The one line is on stderr; the table (stdout) is not wanted in a reason.
reason=$("$membw" check --baseline "$baseline" --quiet --budget "${MEMBW_BUDGET:-40s}" 2>&1 >/dev/null)
rc=$?
case $rc in
  0) exit 0 ;;
  1) scontrol update nodename="$(hostname -s)" state=drain reason="${reason#membw: }" ;;
  *) logger -t membw-health "no verdict (exit $rc): ${reason#membw: error: }" ;;
esac
