# SkillPilot queue processor: runs inside the tool (tclsh or Innovus) and executes requests that
# the runtime drops into <run_dir>/queue/, answering each in <run_dir>/ack/ (seed §5, §6).
#
# Invariants (why this file looks the way it does):
#  - the tool is driven only through files: queue/<request_id>.json in, ack/<request_id>.json out;
#  - a request is claimed by renaming it before it runs, so it runs at most once;
#  - an ack is written to a temp file in ack/ and published with a hard link, which fails when an
#    ack already exists, so each request gets exactly one ack;
#  - only scripts under <run_dir>/scripts/ are sourced, after every symlink on the way has been
#    resolved (component by component) and the real path checked against the real scripts/ dir;
#  - user scripts cannot end the session (`exit` is trapped) nor re-enter the processor (busy flag
#    against scripts that call `update`), and the working directory is restored after each script
#    (restore_wrapper.tcl cds into the design directory, seed §6.2);
#  - session/heartbeat holds a counter bumped by a beat that survives a busy Tcl loop when it
#    can: a Tcl thread (package Thread), else heartbeat_sidecar.sh (a POSIX-sh process on this
#    host that beats while this pid exists and is not stopped). Only in the last resort, `loop`
#    mode, is it bumped on a timer of the event loop, which a long command blocks; ready.json
#    says which mode is in force, and the runtime judges the heartbeat during requests only when
#    it is not `loop`;
#  - while a request's script runs, execution traces on `source`, `exec` and `open "|…"` append
#    one record each to session/audit.jsonl (append-only; the runtime copies them into the
#    timeline) and, under the request's optional `policy`, refuse what it does not allow. This
#    is an audit, not a sandbox: a child interp, `interp alias`, a renamed command or a loaded
#    extension are not traced;
#  - queue/ entries that are not regular files (symlinks, FIFOs) are never opened, and requests
#    larger than max_request_bytes are never read: both are answered FAIL by their name alone.
#
# The boot script sets ::skillpilot::run_dir (and optionally poll_ms, heartbeat_ms, runner_pid,
# runner_host, heartbeat_mode) before sourcing this file, then calls ::skillpilot::main, which
# never returns.

namespace eval ::skillpilot {
    variable schema_version 1.0
    foreach {name default} {
        run_dir "" poll_ms 10 heartbeat_ms 200 runner_pid "" runner_host "" heartbeat_mode auto
    } {
        if {![info exists ::skillpilot::$name]} { variable $name $default }
    }
    # the beat in force: thread | sidecar | loop (see start_beat)
    variable beat_mode loop
    variable sidecar_pid ""
    variable sidecar_restarts 0
    variable here [file dirname [file normalize [info script]]]
    # requests are < 1 KB; anything larger is refused by its size, never read
    variable max_request_bytes 65536
    # the audit of the running request (see audit_on)
    variable audit_id ""
    variable audit_script ""
    variable audit_policy {}
    variable audit_self ""
    variable audit_refused ""
    variable audit_roots {}
    variable busy 0
    variable beats 0
    variable last_beat 0
    variable tmpseq 0
    variable forever 0
    variable reports_dir ""
}

namespace eval ::skillpilot::json {
    variable s ""
    variable i 0
    variable n 0
}

# ── a small JSON reader (tclsh 8.6 ships none): objects become dicts, arrays lists ──────────────

proc ::skillpilot::json::parse {text} {
    variable s $text
    variable i 0
    variable n [string length $text]
    ws
    set v [value]
    ws
    if {$i != $n} { error "unexpected trailing text at offset $i" }
    return $v
}

proc ::skillpilot::json::ws {} {
    variable s; variable i; variable n
    while {$i < $n && [string is space [string index $s $i]]} { incr i }
}

proc ::skillpilot::json::value {} {
    variable s; variable i; variable n
    if {$i >= $n} { error "unexpected end of JSON" }
    set c [string index $s $i]
    switch -- $c {
        "\{" { return [object] }
        "\[" { return [array] }
        "\"" { return [str] }
        t { return [literal true 1] }
        f { return [literal false 0] }
        n { return [literal null ""] }
        default {
            if {[regexp -start $i -- {\A-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?} $s num]} {
                incr i [string length $num]
                return $num
            }
            error "unexpected character '$c' at offset $i"
        }
    }
}

proc ::skillpilot::json::literal {word result} {
    variable s; variable i
    if {[string range $s $i [expr {$i + [string length $word] - 1}]] ne $word} {
        error "bad literal at offset $i"
    }
    incr i [string length $word]
    return $result
}

proc ::skillpilot::json::object {} {
    variable s; variable i
    incr i
    set d [dict create]
    ws
    if {[string index $s $i] eq "\}"} { incr i; return $d }
    while 1 {
        ws
        if {[string index $s $i] ne "\""} { error "expected a key at offset $i" }
        set k [str]
        ws
        if {[string index $s $i] ne ":"} { error "expected ':' at offset $i" }
        incr i
        ws
        dict set d $k [value]
        ws
        set c [string index $s $i]
        incr i
        if {$c eq "\}"} { return $d }
        if {$c ne ","} { error "expected ',' or '\}' at offset [expr {$i - 1}]" }
    }
}

proc ::skillpilot::json::array {} {
    variable s; variable i
    incr i
    set l {}
    ws
    if {[string index $s $i] eq "\]"} { incr i; return $l }
    while 1 {
        ws
        lappend l [value]
        ws
        set c [string index $s $i]
        incr i
        if {$c eq "\]"} { return $l }
        if {$c ne ","} { error "expected ',' or '\]' at offset [expr {$i - 1}]" }
    }
}

proc ::skillpilot::json::str {} {
    variable s; variable i; variable n
    incr i
    set out ""
    while {$i < $n} {
        set c [string index $s $i]
        if {$c eq "\""} { incr i; return $out }
        if {$c eq "\\"} {
            set e [string index $s [incr i]]
            switch -- $e {
                "\"" { append out "\"" }
                "\\" { append out "\\" }
                "/" { append out "/" }
                b { append out "\b" }
                f { append out "\f" }
                n { append out "\n" }
                r { append out "\r" }
                t { append out "\t" }
                u {
                    set hex [string range $s [expr {$i + 1}] [expr {$i + 4}]]
                    if {![regexp {^[0-9a-fA-F]{4}$} $hex]} { error "bad \\u escape at offset $i" }
                    append out [format %c [scan $hex %x]]
                    incr i 4
                }
                default { error "bad escape at offset $i" }
            }
            incr i
            continue
        }
        append out $c
        incr i
    }
    error "unterminated string"
}

# ── JSON writing ───────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::json::quote {value} {
    set out "\""
    foreach c [split $value ""] {
        scan $c %c code
        if {$c eq "\""} { append out "\\\"" } elseif {$c eq "\\"} { append out "\\\\" } elseif {$code < 0x20} {
            append out [format "\\u%04x" $code]
        } else { append out $c }
    }
    return "$out\""
}

# ── file helpers ───────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::now_iso {} {
    set ms [clock milliseconds]
    return "[clock format [expr {$ms / 1000}] -format {%Y-%m-%dT%H:%M:%S} -gmt 1].[format %03d [expr {$ms % 1000}]]Z"
}

# Temp names carry the runtime's marker (.tw-tmp-) so every reader skips them.
proc ::skillpilot::temp_for {path} {
    variable tmpseq
    return [file join [file dirname $path] ".[file tail $path].tw-tmp-[pid]-[incr tmpseq]"]
}

proc ::skillpilot::write_raw {path content} {
    set f [open $path {WRONLY CREAT EXCL}]
    fconfigure $f -translation lf -encoding utf-8
    if {[catch {puts -nonewline $f $content; close $f} err]} {
        catch {close $f}
        file delete $path
        error $err
    }
}

proc ::skillpilot::write_atomic {path content} {
    set tmp [temp_for $path]
    write_raw $tmp $content
    if {[catch {file rename -force $tmp $path} err]} {
        file delete $tmp
        error $err
    }
}

proc ::skillpilot::log {message} {
    variable run_dir
    catch {
        set f [open [file join $run_dir session processor.log] a]
        puts $f "[now_iso] $message"
        close $f
    }
}

# ── the security boundary (seed §6.1) ─────────────────────────────────────────────────────────

# realpath(3) in Tcl: walk the components of an absolute path, replacing every symlink met on the
# way by its target, so that no link (a file or any directory above it) can point outside.
proc ::skillpilot::realpath {path} {
    set todo [lrange [file split $path] 1 end]
    set cur /
    set hops 0
    while {[llength $todo] > 0} {
        set c [lindex $todo 0]
        set todo [lrange $todo 1 end]
        if {$c eq "." || $c eq ""} { continue }
        if {$c eq ".."} { set cur [file dirname $cur]; continue }
        # file split marks a leading ~ as ./~ so that it is never tilde-expanded
        if {[string range $c 0 1] eq "./"} { set c [string range $c 2 end] }
        set next [string trimright $cur /]/$c
        if {![catch {file type $next} type] && $type eq "link"} {
            if {[incr hops] > 40} { error "too many levels of symbolic links at $next" }
            set target [file readlink $next]
            set tparts [file split $target]
            if {[file pathtype $target] eq "absolute"} {
                set cur /
                set tparts [lrange $tparts 1 end]
            }
            set todo [concat $tparts $todo]
            continue
        }
        set cur $next
    }
    return $cur
}

# Returns {ok <real path>} or {reject <detail_code> <message>}.
proc ::skillpilot::check_script {script} {
    variable run_dir
    if {$script eq ""} { return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path: empty"] }
    if {[string index $script 0] in {/ ~ \\} || [file pathtype $script] ne "relative"} {
        return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': absolute paths and ~ are refused"]
    }
    set parts [split $script /]
    if {[lindex $parts 0] ne "scripts" || [llength $parts] < 2} {
        return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': must start with scripts/"]
    }
    foreach p $parts {
        if {$p eq ".." || $p eq "." || $p eq ""} {
            return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': '.', '..' and empty components are refused"]
        }
        if {[string index $p 0] eq "~" || [string first "\\" $p] >= 0} {
            return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': '~' and '\\' are refused"]
        }
    }
    set root [realpath [file join $run_dir scripts]]
    set real [realpath "[string trimright $run_dir /]/$script"]
    if {[string first "$root/" $real] != 0} {
        return [list reject SCRIPT_PATH_REJECTED "security violation: invalid script path '$script': resolves to $real, outside $root"]
    }
    if {![file isfile $real]} {
        return [list reject SCRIPT_NOT_FOUND "script '$script' does not exist under scripts/"]
    }
    return [list ok $real]
}

# ── heartbeat and loop ────────────────────────────────────────────────────────────────────────

# The runner is alive while /proc/<pid> exists and is not a zombie (Linux only; elsewhere assumed).
proc ::skillpilot::runner_alive {pid} {
    if {[catch {
        set f [open /proc/$pid/stat r]
        set stat [read $f]
        close $f
    }]} { return 0 }
    set state [lindex [string range $stat [expr {[string last ")" $stat] + 2}] end] 0]
    return [expr {$state ni {Z X}}]
}

proc ::skillpilot::write_heartbeat {} {
    variable run_dir; variable beats; variable beat_mode
    incr beats
    write_atomic [file join $run_dir session heartbeat] "$beats [now_iso] [pid] $beat_mode\n"
}

proc ::skillpilot::beat {} {
    variable last_beat; variable beat_mode
    set last_beat [clock milliseconds]
    # in thread and sidecar modes another writer owns session/heartbeat
    if {$beat_mode eq "loop"} { write_heartbeat } elseif {$beat_mode eq "sidecar"} { keep_sidecar }
}

# An orphaned session (its runner killed -9) keeps its restored design for orphan_grace_ms, so
# that `timewarp skill resume` can take it over by writing itself into session/runner.json; then
# it ends itself instead of idling forever (grace 0: at once). The runner is session/runner.json
# when readable, else the boot's runner_pid/runner_host (grace 0). Only on the runner's own host
# (under a farm launcher the tool may run elsewhere) and where /proc tells. Called from every
# tick; looks at most once per heartbeat period.
proc ::skillpilot::check_runner {} {
    variable run_dir; variable heartbeat_ms; variable runner_pid; variable runner_host
    variable runner_checked_at; variable orphan_since
    if {![info exists runner_checked_at]} { set runner_checked_at 0; set orphan_since "" }
    set now [clock milliseconds]
    if {$now - $runner_checked_at < $heartbeat_ms} { return }
    set runner_checked_at $now
    if {![file isdirectory /proc/self]} { return }
    set pid $runner_pid
    set host $runner_host
    set grace 0
    if {![catch {
        set f [open [file join $run_dir session runner.json] r]
        set text [read $f]
        close $f
        set r [json::parse $text]
        set r_pid [dict get $r pid]
        set r_host [dict get $r host]
        set r_grace [dict get $r orphan_grace_ms]
    }]} {
        lassign [list $r_pid $r_host $r_grace] pid host grace
    }
    if {$pid eq "" || $host ne [info hostname]} { return }
    set orphan [file join $run_dir session orphan.json]
    if {[runner_alive $pid]} {
        if {$orphan_since ne ""} {
            set orphan_since ""
            catch {file delete $orphan}
            log "runner pid $pid took the session over"
        }
        return
    }
    if {$orphan_since eq ""} {
        set orphan_since $now
        set iso {{ms} {
            return "[clock format [expr {$ms / 1000}] -format {%Y-%m-%dT%H:%M:%S} -gmt 1].[format %03d [expr {$ms % 1000}]]Z"
        }}
        set o "\{\"schema_version\": \"1.0\", \"runner_pid\": $pid, \"since\": \"[apply $iso $now]\","
        append o " \"until\": \"[apply $iso [expr {$now + $grace}]]\", \"orphan_grace_ms\": $grace\}\n"
        catch {write_atomic $orphan $o}
        log "runner pid $pid is gone; the session waits $grace ms for `timewarp skill resume`"
    }
    if {$now - $orphan_since >= $grace} {
        log "runner pid $pid is gone and no resume came within $grace ms; ending the session"
        ::skillpilot::real_exit 0
    }
}

proc ::skillpilot::tick {} {
    variable poll_ms; variable heartbeat_ms; variable last_beat; variable busy
    # Scheduled first, so that a script calling `update` still gets heartbeats; the busy flag
    # keeps that re-entrant tick from claiming another request.
    after $poll_ms ::skillpilot::tick
    if {[catch {
        if {[clock milliseconds] - $last_beat >= $heartbeat_ms} { beat }
        check_runner
        if {!$busy} { scan_queue }
    } err]} {
        log "tick error: $::errorInfo"
    }
}

# ── a beat that survives a busy loop ─────────────────────────────────────────────────────────

# Choose the beat: `auto` tries a thread, then the sidecar, then the loop; `thread` and `sidecar`
# fall back down the same chain when unavailable; `loop` is the old event-loop beat.
proc ::skillpilot::start_beat {} {
    variable heartbeat_mode; variable beat_mode
    set chain [dict get {auto {thread sidecar loop} thread {thread sidecar loop}
        sidecar {sidecar loop} loop {loop}} \
        [expr {$heartbeat_mode in {auto thread sidecar loop} ? $heartbeat_mode : "auto"}]]
    foreach mode $chain {
        if {$mode eq "loop" || [start_${mode}_beat]} { break }
    }
    set beat_mode $mode
    if {$heartbeat_mode ne "auto" && $heartbeat_mode ne $mode} {
        log "heartbeat mode $heartbeat_mode unavailable; using $mode"
    }
}

# A thread of this process writes the heartbeat on its own event loop, so a busy main interp does
# not stop it, while a stopped or dead process does.
proc ::skillpilot::start_thread_beat {} {
    variable run_dir; variable heartbeat_ms; variable beats
    if {[catch {package require Thread}]} { return 0 }
    set body {
        set ::n @N@
        set ::file @FILE@
        set ::seq 0
        proc beat {} {
            set ms [clock milliseconds]
            set ts [clock format [expr {$ms / 1000}] -format {%Y-%m-%dT%H:%M:%S} -gmt 1]
            append ts . [format %03d [expr {$ms % 1000}]] Z
            set tmp [file join [file dirname $::file] ".[file tail $::file].tw-tmp-[pid]-t[incr ::seq]"]
            if {[catch {
                set f [open $tmp {WRONLY CREAT EXCL}]
                puts -nonewline $f "[incr ::n] $ts [pid] thread\n"
                close $f
                file rename -force $tmp $::file
            }]} { catch {file delete $tmp} }
            after @MS@ beat
        }
        beat
        thread::wait
    }
    set file [file join $run_dir session heartbeat]
    if {[catch {
        thread::create [string map [list @N@ $beats @FILE@ [list $file] @MS@ $heartbeat_ms] $body]
    } err]} {
        log "heartbeat thread could not start: $err"
        return 0
    }
    return 1
}

# heartbeat_sidecar.sh beside this file, started on this host with this process's pid; it ends
# when this process is gone. Needs sh and either /proc or ps.
proc ::skillpilot::start_sidecar_beat {} {
    variable run_dir; variable heartbeat_ms; variable beats; variable here; variable sidecar_pid
    set script [file join $here heartbeat_sidecar.sh]
    set sh [lindex [auto_execok sh] 0]
    if {$sh eq "" || ![file readable $script]} { return 0 }
    if {![file readable /proc/[pid]/stat] && [auto_execok ps] eq ""} { return 0 }
    set secs [format %.3f [expr {$heartbeat_ms / 1000.0}]]
    set date_every [expr {max(1, 1000 / max(1, $heartbeat_ms))}]
    set errlog [file join $run_dir session sidecar.log]
    if {[catch {
        set sidecar_pid [exec $sh $script [pid] [file join $run_dir session heartbeat] $secs $beats $date_every \
            </dev/null >/dev/null 2>>$errlog &]
    } err]} {
        log "heartbeat sidecar could not start: $err"
        return 0
    }
    return 1
}

# A sidecar killed by someone else is started again (three times at most, then the heartbeat
# goes stale and the runtime says HEARTBEAT_LOST, with session/sidecar.log as evidence).
proc ::skillpilot::keep_sidecar {} {
    variable sidecar_pid; variable sidecar_restarts; variable busy
    # never while a script runs (it may call update): its exec would be audited as the script's
    if {$busy || $sidecar_pid eq "" || ![file isdirectory /proc/self]} { return }
    set state X
    catch {
        set f [open /proc/$sidecar_pid/stat r]
        set stat [read $f]
        close $f
        set state [lindex [string range $stat [expr {[string last ")" $stat] + 2}] end] 0]
    }
    if {$state ni {Z X x}} { return }
    if {[incr sidecar_restarts] > 3} { set sidecar_pid ""; return }
    log "heartbeat sidecar $sidecar_pid is gone; starting it again ($sidecar_restarts of 3)"
    start_sidecar_beat
}

proc ::skillpilot::scan_queue {} {
    variable run_dir
    set queue [file join $run_dir queue]
    # every entry, whatever its type: a symlink or a FIFO named *.json is answered, never opened
    foreach name [lsort [glob -nocomplain -directory $queue -tails *.json]] {
        set id [string range $name 0 end-5]
        set src [file join $queue $name]
        set claimed [file join $queue "$name.claimed"]
        set ack [file join $run_dir ack "$id.json"]
        if {[file exists $claimed] || [file exists "$claimed.done"] || [file exists $ack]} {
            # A second request with an id already seen is never run and never acked again.
            set dup [file join $queue "$name.duplicate-[clock milliseconds]"]
            catch {file rename $src $dup}
            log "duplicate request id $id refused (moved to [file tail $dup])"
            continue
        }
        # Claim before running: a request that cannot be renamed was claimed already. rename(2)
        # moves a symlink itself, never its target.
        if {[catch {file rename $src $claimed}]} { continue }
        set refusal [entry_refusal $claimed $name]
        if {[llength $refusal] > 0} {
            catch {file rename $claimed "$claimed.refused"}
            log "request $id refused: [lindex $refusal 1]"
            publish_ack $id [ack_text [dict create id $id detail [lindex $refusal 0] \
                message [lindex $refusal 1]]]
            continue
        }
        if {[catch {process $id $claimed} err]} {
            # never leave the processor busy forever; the runtime's deadline will answer this one
            variable busy 0
            log "processing $id failed: $::errorInfo"
        }
        catch {file rename $claimed "$claimed.done"}
    }
}

# {} for a claimed entry that may be read, else {<detail_code> <message>}: judged by lstat
# alone, so a symlink, a FIFO or a huge file is never opened.
proc ::skillpilot::entry_refusal {path name} {
    variable max_request_bytes
    if {[catch {file lstat $path st} err]} {
        return [list REQUEST_UNREADABLE "request queue/$name could not be examined: $err"]
    }
    if {$st(type) ne "file"} {
        return [list REQUEST_NOT_REGULAR "security violation: queue/$name is a $st(type), not a regular file; it was not followed nor read (moved aside as $name.claimed.refused)"]
    }
    if {$st(size) > $max_request_bytes} {
        return [list REQUEST_TOO_LARGE "request queue/$name is $st(size) bytes, over the limit of $max_request_bytes; it was not read (moved aside as $name.claimed.refused)"]
    }
    return {}
}

# The ack's JSON from a dict: id, and optionally job_id, status (FAIL), etype (INTERNAL_ERROR),
# detail, message, script, started, finished, duration, evidence.
proc ::skillpilot::ack_text {a} {
    set now [now_iso]
    set a [dict merge [dict create job_id "" status FAIL etype INTERNAL_ERROR detail "" message "" \
        script "" started $now finished $now duration 0 evidence {}] $a]
    set ack "\{\n"
    append ack "  \"schema_version\": \"1.0\",\n"
    append ack "  \"request_id\": [json::quote [dict get $a id]],\n"
    append ack "  \"job_id\": [json::quote [dict get $a job_id]],\n"
    append ack "  \"status\": \"[dict get $a status]\",\n"
    append ack "  \"error_type\": \"[dict get $a etype]\",\n"
    if {[dict get $a detail] ne ""} { append ack "  \"detail_code\": \"[dict get $a detail]\",\n" }
    append ack "  \"message\": [json::quote [dict get $a message]],\n"
    append ack "  \"script\": [json::quote [dict get $a script]],\n"
    append ack "  \"started_at\": \"[dict get $a started]\",\n"
    append ack "  \"finished_at\": \"[dict get $a finished]\",\n"
    append ack "  \"duration_ms\": [dict get $a duration],\n"
    set ev {}
    foreach e [dict get $a evidence] { lappend ev [json::quote $e] }
    append ack "  \"evidence_paths\": \[[join $ev {, }]\],\n"
    append ack "  \"by\": \"queue_processor\"\n\}\n"
    return $ack
}

# ── one request ───────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::process {id claimed} {
    variable busy; variable run_dir
    set busy 1
    set started [now_iso]
    set t0 [clock milliseconds]
    set job_id ""
    set script ""
    set evidence {}
    set detail ""
    set status FAIL
    set etype INTERNAL_ERROR
    set message ""
    if {[catch {
        set f [open $claimed r]
        fconfigure $f -encoding utf-8
        set text [read $f [expr {$::skillpilot::max_request_bytes + 1}]]
        close $f
    } err]} {
        set detail REQUEST_UNREADABLE
        set message "request $id could not be read: $err"
    } elseif {[catch {::skillpilot::json::parse $text} req] || ![string is list $req] || [llength $req] % 2 != 0} {
        set detail REQUEST_MALFORMED
        set message "malformed request JSON in queue/$id.json: $req"
    } else {
        foreach key {schema_version request_id job_id action script created_at} {
            if {![dict exists $req $key]} {
                set detail REQUEST_MALFORMED
                set message "malformed request queue/$id.json: missing field $key"
                break
            }
        }
        if {$detail eq "" && [dict exists $req policy] && (![string is list [dict get $req policy]]
                || [llength [dict get $req policy]] % 2 != 0)} {
            set detail REQUEST_MALFORMED
            set message "malformed request queue/$id.json: policy is not an object"
        }
        if {$detail eq ""} {
            set job_id [dict get $req job_id]
            set script [dict get $req script]
            if {[dict get $req request_id] ne $id} {
                set detail REQUEST_MALFORMED
                set message "malformed request: request_id '[dict get $req request_id]' does not match file name $id.json"
            } elseif {[dict get $req action] ne "SOURCE_TCL"} {
                set etype CMD_FAIL
                set detail SCRIPT_PATH_REJECTED
                set message "security violation: action '[dict get $req action]' refused (only SOURCE_TCL)"
            } else {
                set verdict [check_script $script]
                if {[lindex $verdict 0] ne "ok"} {
                    set etype CMD_FAIL
                    set detail [lindex $verdict 1]
                    set message [lindex $verdict 2]
                } else {
                    set policy [expr {[dict exists $req policy] ? [dict get $req policy] : {}}]
                    lassign [run_script $id $script [lindex $verdict 1] $policy] \
                        status etype detail message evidence
                }
            }
        }
    }
    set duration [expr {[clock milliseconds] - $t0}]
    set ack [ack_text [dict create id $id job_id $job_id status $status etype $etype detail $detail \
        message $message script $script started $started finished [now_iso] duration $duration \
        evidence $evidence]]
    publish_ack $id $ack
    set busy 0
}

proc ::skillpilot::run_script {id script real policy} {
    variable run_dir
    set is_restore [expr {$script eq "scripts/restore_wrapper.tcl"}]
    set fail_type [expr {$is_restore ? "RESTORE_FAIL" : "CMD_FAIL"}]
    set here [pwd]
    cd $run_dir
    log "request $id: source $script"
    audit_on $id $script $real $policy
    set rc [catch {uplevel #0 [list source $real]} result opts]
    set refused [audit_off]
    # restore_wrapper.tcl cds into the design directory (seed §6.2); every script gets the run
    # directory back so relative paths in the next one mean the same thing.
    catch {cd $run_dir}
    if {($rc == 0 || $rc == 2) && $refused eq ""} {
        return [list PASS OK "" "sourced $script" {}]
    }
    set info [expr {[dict exists $opts -errorinfo] ? [dict get $opts -errorinfo] : $result}]
    set code [expr {[dict exists $opts -errorcode] ? [dict get $opts -errorcode] : "NONE"}]
    set errfile [file join session errors "$id.txt"]
    if {$rc == 1} {
        catch {
            file mkdir [file join $run_dir session errors]
            write_atomic [file join $run_dir $errfile] "$info\n"
        }
    }
    # a refusal fails the request even when the script caught the error it raised
    if {$refused ne ""} {
        return [list FAIL $fail_type POLICY_REFUSED "policy refused in $script: $refused (see session/audit.jsonl)" \
            [concat session/audit.jsonl [expr {$rc == 1 ? [list $errfile] : {}}]]]
    }
    if {[lindex $code 0] eq "SKILLPILOT" && [lindex $code 1] eq "EXIT"} {
        return [list FAIL $fail_type SCRIPT_EXIT "$script called exit [lindex $code 2]; the session stays up (see $errfile)" [list $errfile]]
    }
    set first [lindex [split $result "\n"] 0]
    return [list FAIL $fail_type TCL_ERROR "Tcl error in $script: $first (errorInfo in $errfile)" [list $errfile]]
}

# Exactly one ack per request id: the hard link fails when the ack exists already.
proc ::skillpilot::publish_ack {id content} {
    variable run_dir
    set final [file join $run_dir ack "$id.json"]
    set tmp [temp_for $final]
    if {[catch {write_raw $tmp $content} err]} {
        log "could not write the ack for $id: $err"
        return 0
    }
    set rc [catch {file link -hard $final $tmp} err]
    file delete $tmp
    if {$rc} {
        log "ack for $id exists already; this one was dropped ($err)"
        return 0
    }
    return 1
}

# ── audit of source, exec and open "|…" (what a script does) ────────────────────────────────

# Tcl's own library directories, as they are at start: `package require` sources pkgIndex.tcl
# files and .tm modules from there. A script that extends auto_path later does not widen this.
proc ::skillpilot::audit_roots_init {} {
    variable audit_roots {}
    set tm {}
    catch {set tm [::tcl::tm::path list]}
    foreach d [concat [list [info library]] $::auto_path $tm] {
        if {[file pathtype $d] eq "absolute" && [file isdirectory $d]} {
            lappend audit_roots [realpath $d]
        }
    }
    set audit_roots [lsort -unique $audit_roots]
}

# Arm the traces for one request; `policy` is the request's optional policy (a dict).
proc ::skillpilot::audit_on {id script real policy} {
    variable audit_id $id audit_script $script audit_policy $policy audit_self $real audit_refused ""
    foreach cmd {source exec open} {
        catch {trace add execution ::$cmd enter ::skillpilot::audit_$cmd}
    }
}

# Disarm them; returns the first refusal of the request ("" when none).
proc ::skillpilot::audit_off {} {
    variable audit_id ""; variable audit_refused
    foreach cmd {source exec open} {
        catch {trace remove execution ::$cmd enter ::skillpilot::audit_$cmd}
    }
    return $audit_refused
}

proc ::skillpilot::policy_flag {name} {
    variable audit_policy
    return [expr {[dict exists $audit_policy $name] && [string is true -strict [dict get $audit_policy $name]]}]
}

# Where a real path lies: run_dir | design | tcl_library | outside.
proc ::skillpilot::audit_where {real} {
    variable run_dir; variable audit_policy; variable audit_roots
    set dirs [list run_dir [realpath $run_dir]]
    if {[dict exists $audit_policy allowed_dirs]} {
        foreach d [dict get $audit_policy allowed_dirs] { lappend dirs design [realpath $d] }
    }
    foreach d $audit_roots { lappend dirs tcl_library $d }
    foreach {where d} $dirs {
        if {[string first "[string trimright $d /]/" $real] == 0} { return $where }
    }
    return outside
}

proc ::skillpilot::audit_source {cmd op} {
    variable audit_self; variable audit_script
    # the processor's own source of the request's script
    if {$audit_self ne "" && [llength $cmd] == 2 && [lindex $cmd 1] eq $audit_self} {
        set audit_self ""
        return
    }
    set file [lindex $cmd end]
    # normalize expands a leading ~ as source does; realpath then resolves every link
    set real [realpath [file normalize [file join [pwd] $file]]]
    set where [audit_where $real]
    set exception ""
    if {$audit_script eq "scripts/restore_wrapper.tcl" && [string match *.enc $real]} {
        set exception "restore (seed 6.2)"
    }
    set refused ""
    if {$where eq "outside" && $exception eq "" && [policy_flag confine_paths]} {
        set refused "source of $real, outside the run directory and the design's directory (policy confine_paths)"
    }
    audit_record source [list path $file resolved $real where $where] $refused $exception
}

proc ::skillpilot::audit_exec {cmd op} {
    set words [lrange $cmd 1 end]
    while {[string match -* [lindex $words 0]]} {
        set w [lindex $words 0]
        set words [lrange $words 1 end]
        if {$w eq "--"} { break }
    }
    audit_command exec $words
}

proc ::skillpilot::audit_open {cmd op} {
    set name [lindex $cmd 1]
    if {[string index $name 0] ne "|"} { return }
    if {[catch {lrange [string range $name 1 end] 0 end} words]} {
        set words [list [string range $name 1 end]]
    }
    audit_command open $words
}

# The programs of an exec-style pipeline: the first word of each stage, redirections skipped.
proc ::skillpilot::pipeline_programs {words} {
    set out {}
    set head 1
    set skip 0
    foreach w $words {
        if {$skip} { set skip 0; continue }
        if {$w in {| |&}} { set head 1; continue }
        if {$w eq "&"} { continue }
        set redirect 0
        foreach op {2>@1 >>& >&@ 2>> 2>@ << <@ >> >& >@ 2> < >} {
            if {[string first $op $w] == 0} {
                set redirect 1
                if {$w eq $op && $op ne "2>@1"} { set skip 1 }
                break
            }
        }
        if {$redirect} { continue }
        if {$head} { lappend out $w; set head 0 }
    }
    return $out
}

# With the policy's allow_exec present, a program is allowed when listed: a bare name matches a
# bare command found on PATH, an entry with a / matches that real file.
proc ::skillpilot::exec_allowed {prog path} {
    variable audit_policy
    if {![dict exists $audit_policy allow_exec]} { return 1 }
    foreach a [dict get $audit_policy allow_exec] {
        if {[string first / $a] >= 0} {
            if {$path ne "" && [realpath [file join [pwd] $path]] eq [realpath $a]} { return 1 }
        } elseif {[string first / $prog] < 0 && $prog eq $a} {
            return 1
        }
    }
    return 0
}

proc ::skillpilot::audit_command {kind words} {
    set resolved {}
    set refused ""
    foreach prog [pipeline_programs $words] {
        set path [lindex [auto_execok $prog] 0]
        lappend resolved [expr {$path eq "" ? $prog : $path}]
        if {$refused eq "" && ![exec_allowed $prog $path]} {
            set refused "$kind of '$prog' (not in the policy's allow_exec)"
        }
    }
    audit_record $kind [list argv $words programs $resolved] $refused ""
}

# One line of session/audit.jsonl (one append per line); a refusal is raised into the script.
proc ::skillpilot::audit_record {command fields refused exception} {
    variable run_dir; variable audit_id; variable audit_script; variable audit_refused
    set line "\{\"schema_version\": \"1.0\", \"ts\": \"[now_iso]\", \"request_id\": [json::quote $audit_id],"
    append line " \"script\": [json::quote $audit_script], \"command\": \"$command\""
    dict for {k v} $fields {
        if {$k in {argv programs}} {
            set items {}
            foreach x $v { lappend items [json::quote $x] }
            append line ", \"$k\": \[[join $items {, }]\]"
        } else {
            append line ", \"$k\": [json::quote $v]"
        }
    }
    append line ", \"decision\": \"[expr {$refused eq "" ? "allowed" : "refused"}]\""
    if {$refused ne ""} { append line ", \"reason\": [json::quote $refused]" }
    if {$exception ne ""} { append line ", \"exception\": [json::quote $exception]" }
    append line "\}"
    if {[catch {
        set f [open [file join $run_dir session audit.jsonl] {WRONLY CREAT APPEND}]
        fconfigure $f -translation lf -encoding utf-8 -buffering full
        puts $f $line
        close $f
    } err]} { log "audit record lost: $err" }
    if {$refused ne ""} {
        if {$audit_refused eq ""} { set audit_refused $refused }
        return -code error -errorcode [list SKILLPILOT POLICY_REFUSED] "policy refused: $refused"
    }
}

# ── start ─────────────────────────────────────────────────────────────────────────────────────

proc ::skillpilot::main {} {
    variable run_dir; variable reports_dir
    set stubbed [namespace exists ::innovus_stub]
    if {$run_dir eq ""} { error "::skillpilot::run_dir is not set" }
    set run_dir [file normalize $run_dir]
    set reports_dir [file join $run_dir reports]
    foreach d {queue ack session scripts reports} { file mkdir [file join $run_dir $d] }
    cd $run_dir
    # User scripts must not end the session; the processor keeps the real exit for itself.
    if {[info commands ::skillpilot::real_exit] eq ""} {
        rename ::exit ::skillpilot::real_exit
        proc ::exit {{code 0}} {
            return -code error -errorcode [list SKILLPILOT EXIT $code] "exit $code called by a script (trapped)"
        }
    }
    audit_roots_init
    write_heartbeat
    start_beat
    beat
    variable beat_mode; variable sidecar_pid
    set ready "\{\"schema_version\": \"1.0\", \"pid\": [pid], \"host\": [json::quote [info hostname]],"
    append ready " \"tcl_version\": \"[info patchlevel]\", \"stubbed\": [expr {$stubbed ? "true" : "false"}],"
    append ready " \"heartbeat_mode\": \"$beat_mode\","
    if {$sidecar_pid ne ""} { append ready " \"heartbeat_pid\": $sidecar_pid," }
    append ready " \"started_at\": \"[now_iso]\"\}\n"
    write_atomic [file join $run_dir session ready.json] $ready
    log "queue processor ready (pid [pid], Tcl [info patchlevel], heartbeat $beat_mode)"
    after 0 ::skillpilot::tick
    vwait ::skillpilot::forever
}
