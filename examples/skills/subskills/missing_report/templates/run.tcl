# missing_report: writes the timing report only, so validate_outputs fails with OUTPUT_MISSING.
report_timing -out_file reports/timing.rpt
