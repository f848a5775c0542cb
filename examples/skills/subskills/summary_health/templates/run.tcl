# summary_health: timing, area, power and a design summary of the restored design.
# Runs inside the session with the run directory as working directory (reports/ is relative).
report_timing -out_file reports/timing.rpt
report_area -out_file reports/area.rpt
report_power -out_file reports/power.rpt
summaryReport -outfile reports/summary.rpt

# metrics for summary.json, taken from the reports so that they are evidence-backed
proc sh_grab {file pattern} {
    set f [open $file r]; set text [read $f]; close $f
    if {[regexp -line $pattern $text -> value]} { return $value }
    return null
}
set wns [sh_grab reports/timing.rpt {^WNS \(ns\):\s*(\S+)}]
set tns [sh_grab reports/timing.rpt {^TNS \(ns\):\s*(\S+)}]
set vio [sh_grab reports/timing.rpt {^Violating Paths:\s*(\S+)}]
set cells [sh_grab reports/summary.rpt {^Number of cells:\s*(\S+)}]
set util [sh_grab reports/summary.rpt {^Core utilization:\s*([0-9.]+)}]
set f [open reports/metrics.json w]
puts $f "{\"wns_ns\": $wns, \"tns_ns\": $tns, \"violating_paths\": $vio, \"cells\": $cells, \"utilization_pct\": $util}"
close $f
