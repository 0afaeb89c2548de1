;; The inspect Tool as a core module (built into inspect.wasm by `deno task build:components`).
;; Input {"path": string} (JSON, no escapes in the path), options {"depth": positive integer}.
;; It emits `inspect_started`, lists `path` inside the preopened workspace to `depth` levels and
;; finishes with {"eventSequence": n, "entries": ["a", "dir/", "dir/b", ...]}; directories end in "/".
;; A path the workspace refuses finishes with error `fs_error` and details.errno (a wasi error-code).
(module
  (import "wasi:filesystem/preopens@0.2.12" "get-directories" (func $get_directories (param i32)))
  (import "wasi:filesystem/types@0.2.12" "[method]descriptor.open-at"
    (func $open_at (param i32 i32 i32 i32 i32 i32 i32)))
  (import "wasi:filesystem/types@0.2.12" "[method]descriptor.read-directory" (func $read_directory (param i32 i32)))
  (import "wasi:filesystem/types@0.2.12" "[method]directory-entry-stream.read-directory-entry"
    (func $read_directory_entry (param i32 i32)))
  (import "wasi:filesystem/types@0.2.12" "[resource-drop]descriptor" (func $drop_descriptor (param i32)))
  (import "wasi:filesystem/types@0.2.12" "[resource-drop]directory-entry-stream" (func $drop_stream (param i32)))
  (import "brain:tool/host@0.2.0" "emit" (func $emit (param i32 i32 i32 i32 i32)))
  (import "brain:tool/host@0.2.0" "finish" (func $finish (param i32 i32 i32 i32 i32 i32 i32)))

  ;; 0..1024 constants, 2048 host return area, 2112 run return area, 2304 WASI return area,
  ;; 8192..16384 the path prefix, 16384..1 MiB the allocator, 1 MiB.. the output (grows).
  (memory (export "memory") 17)
  (global $heap (mut i32) (i32.const 16384))
  (global $out (mut i32) (i32.const 1048576))
  (global $count (mut i32) (i32.const 0))

  (data (i32.const 0) "{\"path\":\"")                                  ;; 0,9
  (data (i32.const 16) "{\"depth\":")                                  ;; 16,9
  (data (i32.const 32) "inspect_started")                              ;; 32,15
  (data (i32.const 48) "{\"status\":\"ok\",\"value\":{\"eventSequence\":") ;; 48,40
  (data (i32.const 96) ",\"entries\":[")                               ;; 96,12
  (data (i32.const 112) "]}}")                                         ;; 112,3
  (data (i32.const 128) "{\"status\":\"error\",\"error\":{\"code\":\"fs_error\",\"message\":\"the workspace refused the path\",\"details\":{\"errno\":") ;; 128,107
  (data (i32.const 240) "}}}")                                         ;; 240,3
  (data (i32.const 256) "inspect expects {\"path\": string} without escapes and {\"depth\": positive integer}") ;; 256,80
  (data (i32.const 352) "no preopened workspace")                      ;; 352,22
  (data (i32.const 384) "0123456789abcdef")                            ;; 384,16

  (func (export "cabi_realloc") (param $old i32) (param $old_size i32) (param $align i32) (param $size i32) (result i32)
    (local $ptr i32)
    (local.set $ptr (i32.and (i32.add (global.get $heap) (i32.sub (local.get $align) (i32.const 1)))
                             (i32.sub (i32.const 0) (local.get $align))))
    (global.set $heap (i32.add (local.get $ptr) (local.get $size)))
    (if (i32.gt_u (global.get $heap) (i32.const 1048576)) (then (unreachable)))
    (if (local.get $old_size) (then (memory.copy (local.get $ptr) (local.get $old) (local.get $old_size))))
    (local.get $ptr))

  (func $put (param $b i32)
    (if (i32.ge_u (i32.add (global.get $out) (i32.const 8)) (i32.mul (memory.size) (i32.const 65536)))
      (then (if (i32.eq (memory.grow (i32.const 1)) (i32.const -1)) (then (unreachable)))))
    (i32.store8 (global.get $out) (local.get $b))
    (global.set $out (i32.add (global.get $out) (i32.const 1))))
  (func $put_bytes (param $p i32) (param $n i32)
    (block $done (loop $next
      (br_if $done (i32.eqz (local.get $n)))
      (call $put (i32.load8_u (local.get $p)))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br $next))))
  (func $put_u64 (param $v i64)
    (if (i64.ge_u (local.get $v) (i64.const 10)) (then (call $put_u64 (i64.div_u (local.get $v) (i64.const 10)))))
    (call $put (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10))))))
  ;; a JSON string body: quotes, backslashes and control characters escaped
  (func $put_escaped (param $p i32) (param $n i32)
    (local $b i32)
    (block $done (loop $next
      (br_if $done (i32.eqz (local.get $n)))
      (local.set $b (i32.load8_u (local.get $p)))
      (if (i32.or (i32.eq (local.get $b) (i32.const 34)) (i32.eq (local.get $b) (i32.const 92)))
        (then (call $put (i32.const 92)) (call $put (local.get $b)))
        (else (if (i32.lt_u (local.get $b) (i32.const 32))
          (then
            (call $put (i32.const 92)) (call $put (i32.const 117)) (call $put (i32.const 48)) (call $put (i32.const 48))
            (call $put (i32.load8_u (i32.add (i32.const 384) (i32.shr_u (local.get $b) (i32.const 4)))))
            (call $put (i32.load8_u (i32.add (i32.const 384) (i32.and (local.get $b) (i32.const 15))))))
          (else (call $put (local.get $b))))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br $next))))

  (func $starts_with (param $p i32) (param $n i32) (param $q i32) (param $m i32) (result i32)
    (if (i32.lt_u (local.get $n) (local.get $m)) (then (return (i32.const 0))))
    (block $done (loop $next
      (br_if $done (i32.eqz (local.get $m)))
      (if (i32.ne (i32.load8_u (local.get $p)) (i32.load8_u (local.get $q))) (then (return (i32.const 0))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (local.set $q (i32.add (local.get $q) (i32.const 1)))
      (local.set $m (i32.sub (local.get $m) (i32.const 1)))
      (br $next)))
    (i32.const 1))

  (func $err (param $ptr i32) (param $len i32) (result i32)
    (i32.store8 (i32.const 2112) (i32.const 1))
    (i32.store (i32.const 2116) (local.get $ptr))
    (i32.store (i32.const 2120) (local.get $len))
    (i32.const 2112))

  ;; Lists `dir` into the output; the prefix buffer holds `plen` bytes of parent path. 0, or errno + 1.
  (func $list (param $dir i32) (param $plen i32) (param $depth i32) (result i32)
    (local $stream i32) (local $mark i32) (local $type i32) (local $name i32) (local $nlen i32)
    (local $child i32) (local $r i32)
    (call $read_directory (local.get $dir) (i32.const 2304))
    (if (i32.load8_u (i32.const 2304)) (then (return (i32.add (i32.load8_u (i32.const 2308)) (i32.const 1)))))
    (local.set $stream (i32.load (i32.const 2308)))
    (block $done (loop $next
      (local.set $mark (global.get $heap))
      (call $read_directory_entry (local.get $stream) (i32.const 2304))
      (if (i32.load8_u (i32.const 2304))
        (then (local.set $r (i32.add (i32.load8_u (i32.const 2308)) (i32.const 1))) (br $done)))
      (br_if $done (i32.eqz (i32.load8_u (i32.const 2308))))
      (local.set $type (i32.load8_u (i32.const 2312)))
      (local.set $name (i32.load (i32.const 2316)))
      (local.set $nlen (i32.load (i32.const 2320)))
      (if (i32.ge_u (i32.add (i32.add (local.get $plen) (local.get $nlen)) (i32.const 1)) (i32.const 8192))
        (then (local.set $r (i32.const 19)) (br $done))) ;; name-too-long
      (memory.copy (i32.add (i32.const 8192) (local.get $plen)) (local.get $name) (local.get $nlen))
      (if (global.get $count) (then (call $put (i32.const 44))))
      (global.set $count (i32.add (global.get $count) (i32.const 1)))
      (call $put (i32.const 34))
      (call $put_escaped (i32.const 8192) (i32.add (local.get $plen) (local.get $nlen)))
      (if (i32.eq (local.get $type) (i32.const 3)) (then (call $put (i32.const 47))))
      (call $put (i32.const 34))
      (if (i32.and (i32.eq (local.get $type) (i32.const 3)) (i32.gt_u (local.get $depth) (i32.const 1))) (then
        (i32.store8 (i32.add (i32.const 8192) (i32.add (local.get $plen) (local.get $nlen))) (i32.const 47))
        (call $open_at (local.get $dir) (i32.const 0) (local.get $name) (local.get $nlen) (i32.const 2) (i32.const 1)
          (i32.const 2304))
        (if (i32.load8_u (i32.const 2304))
          (then (local.set $r (i32.add (i32.load8_u (i32.const 2308)) (i32.const 1))) (br $done)))
        (local.set $child (i32.load (i32.const 2308)))
        (local.set $r (call $list (local.get $child) (i32.add (i32.add (local.get $plen) (local.get $nlen)) (i32.const 1))
          (i32.sub (local.get $depth) (i32.const 1))))
        (call $drop_descriptor (local.get $child))
        (br_if $done (local.get $r))))
      (global.set $heap (local.get $mark))
      (br $next)))
    (call $drop_stream (local.get $stream))
    (local.get $r))

  (func (export "brain:tool/tool@0.2.0#run")
    (param $tool i32) (param $tool_len i32) (param $input i32) (param $input_len i32)
    (param $options i32) (param $options_len i32) (param $deadline i64) (result i32)
    (local $path i32) (local $path_len i32) (local $b i32) (local $depth i32) (local $p i32)
    (local $sequence i64) (local $dir i32) (local $r i32) (local $start i32)
    ;; input: {"path":"<bytes without \ or ">"}
    (if (i32.eqz (call $starts_with (local.get $input) (local.get $input_len) (i32.const 0) (i32.const 9)))
      (then (return (call $err (i32.const 256) (i32.const 80)))))
    (local.set $path (i32.add (local.get $input) (i32.const 9)))
    (block $end (loop $scan
      (if (i32.ge_u (i32.add (local.get $path_len) (i32.const 9)) (local.get $input_len))
        (then (return (call $err (i32.const 256) (i32.const 80)))))
      (local.set $b (i32.load8_u (i32.add (local.get $path) (local.get $path_len))))
      (br_if $end (i32.eq (local.get $b) (i32.const 34)))
      (if (i32.eq (local.get $b) (i32.const 92)) (then (return (call $err (i32.const 256) (i32.const 80)))))
      (local.set $path_len (i32.add (local.get $path_len) (i32.const 1)))
      (br $scan)))
    ;; options: {"depth":<digits>}
    (if (i32.eqz (call $starts_with (local.get $options) (local.get $options_len) (i32.const 16) (i32.const 9)))
      (then (return (call $err (i32.const 256) (i32.const 80)))))
    (local.set $p (i32.add (local.get $options) (i32.const 9)))
    (block $end (loop $digits
      (local.set $b (i32.load8_u (local.get $p)))
      (br_if $end (i32.or (i32.lt_u (local.get $b) (i32.const 48)) (i32.gt_u (local.get $b) (i32.const 57))))
      (local.set $depth (i32.add (i32.mul (local.get $depth) (i32.const 10)) (i32.sub (local.get $b) (i32.const 48))))
      (local.set $p (i32.add (local.get $p) (i32.const 1)))
      (br $digits)))
    (if (i32.eqz (local.get $depth)) (then (return (call $err (i32.const 256) (i32.const 80)))))

    (call $emit (i32.const 32) (i32.const 15) (local.get $input) (local.get $input_len) (i32.const 2048))
    (if (i32.load8_u (i32.const 2048))
      (then (return (call $err (i32.load (i32.const 2056)) (i32.load (i32.const 2060))))))
    (local.set $sequence (i64.load (i32.const 2056)))

    (call $get_directories (i32.const 2304))
    (if (i32.eqz (i32.load (i32.const 2308))) (then (return (call $err (i32.const 352) (i32.const 22)))))
    (local.set $dir (i32.load (i32.load (i32.const 2304))))

    (call $open_at (local.get $dir) (i32.const 1) (local.get $path) (local.get $path_len) (i32.const 2) (i32.const 1)
      (i32.const 2304))
    (if (i32.load8_u (i32.const 2304))
      (then (local.set $r (i32.add (i32.load8_u (i32.const 2308)) (i32.const 1))))
      (else
        (local.set $dir (i32.load (i32.const 2308)))
        (call $put_bytes (i32.const 48) (i32.const 40))
        (call $put_u64 (local.get $sequence))
        (call $put_bytes (i32.const 96) (i32.const 12))
        (local.set $r (call $list (local.get $dir) (i32.const 0) (local.get $depth)))
        (call $put_bytes (i32.const 112) (i32.const 3))))
    (if (local.get $r) (then
      (global.set $out (i32.const 1048576))
      (call $put_bytes (i32.const 128) (i32.const 107))
      (call $put_u64 (i64.extend_i32_u (i32.sub (local.get $r) (i32.const 1))))
      (call $put_bytes (i32.const 240) (i32.const 3))))
    (call $finish (i32.const 1) (i32.const 1048576) (i32.sub (global.get $out) (i32.const 1048576))
      (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 2048))
    (if (i32.load8_u (i32.const 2048))
      (then (return (call $err (i32.load (i32.const 2056)) (i32.load (i32.const 2060))))))
    (i32.store8 (i32.const 2112) (i32.const 0))
    (i32.const 2112))
)
