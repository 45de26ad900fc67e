# One CTest case per (sub-project, version): `<sub>.<version>` runs the driver on that version
# alone (`--version NAME --quick`: the driver checks it against the reference, then times it), so
# a grader reads "stream_compaction.scan_shared_mem ... Failed" directly. The list comes from the
# driver's own --list at test time (a version name is typed once, in its registry).
#  - labels: the sub-project, `version`, and `cpu` or `gpu`; `sanitizer` for the memcheck twins
#  - a run in which nothing passed or failed (no GPU, a handout's NOT IMPLEMENTED stub, a library
#    that was not found) exits 77 (COURSE_SKIP_EXIT) and is reported as skipped, never passed
#  - with -DCOURSE_VERSION_SANITIZER_TESTS=ON on a machine with a GPU and compute-sanitizer, each
#    GPU version also gets `<sub>.<version>.memcheck` (memcheck, any error fails it; label sanitizer)
execute_process(COMMAND nvidia-smi -L RESULT_VARIABLE _course_smi_rc OUTPUT_QUIET ERROR_QUIET)
find_program(COURSE_COMPUTE_SANITIZER compute-sanitizer HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
# memcheck twins: opt-in (each takes 10-60 s under the sanitizer); scripts/gpu_check.sh turns them on
option(COURSE_VERSION_SANITIZER_TESTS "add <sub>.<version>.memcheck CTest cases (needs a GPU and compute-sanitizer)" OFF)
set(COURSE_VERSION_TESTS_WITH_SANITIZER OFF)
if(COURSE_VERSION_SANITIZER_TESTS AND _course_smi_rc EQUAL 0 AND COURSE_COMPUTE_SANITIZER)
  set(COURSE_VERSION_TESTS_WITH_SANITIZER ON)
endif()

function(course_version_tests sub driver_target)
  set(script "${CMAKE_CURRENT_BINARY_DIR}/${sub}_version_tests.cmake")
  set(sanitizer "")
  if(COURSE_VERSION_TESTS_WITH_SANITIZER)
    set(sanitizer "${COURSE_COMPUTE_SANITIZER}")
  endif()
  file(GENERATE OUTPUT "${script}" CONTENT "
set(driver \"$<TARGET_FILE:${driver_target}>\")
set(sanitizer \"${sanitizer}\")
execute_process(COMMAND \"\${driver}\" --list OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_QUIET)
if(NOT rc EQUAL 0)
  add_test(${sub}.list \"\${driver}\" --list)
  return()
endif()
string(REPLACE \";\" \",\" out \"\${out}\")  # ideas may hold semicolons
string(REPLACE \"\\n\" \";\" lines \"\${out}\")
set(gpu_col -1)
foreach(line IN LISTS lines)
  string(STRIP \"\${line}\" line)
  string(REGEX REPLACE \" +\" \";\" cols \"\${line}\")
  list(LENGTH cols ncols)
  if(ncols LESS 3)
    continue()
  endif()
  list(GET cols 1 name)
  if(name MATCHES \"^name$\")
    list(FIND cols gpu gpu_col)
    continue()
  endif()
  if(gpu_col LESS 0)
    continue()
  endif()
  list(GET cols \${gpu_col} gpu_flag)
  set(kind cpu)
  if(gpu_flag MATCHES \"^yes$\")
    set(kind gpu)
  endif()
  add_test(${sub}.\${name} \"\${driver}\" --version \${name} --quick)
  set_tests_properties(${sub}.\${name} PROPERTIES LABELS \"${sub};version;\${kind}\"
                       ENVIRONMENT \"COURSE_SKIP_EXIT=77;COURSE_SKIP_VERSION=\${name}\" SKIP_RETURN_CODE 77 TIMEOUT 900)
  if(kind MATCHES \"^gpu$\" AND sanitizer)
    add_test(${sub}.\${name}.memcheck \"\${sanitizer}\" --tool memcheck --error-exitcode 3 \"\${driver}\" --version \${name} --quick)
    set_tests_properties(${sub}.\${name}.memcheck PROPERTIES LABELS \"${sub};sanitizer;gpu\"
                         ENVIRONMENT \"COURSE_SKIP_EXIT=77;COURSE_SKIP_VERSION=\${name}\" SKIP_RETURN_CODE 77 TIMEOUT 1800
                         RESOURCE_LOCK gpu_sanitizer)
  endif()
endforeach()
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${script}")
endfunction()
