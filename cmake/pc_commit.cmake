# pc_commit.cmake - write OUT with the source tree's commit (PC_GIT_COMMIT), for the
# files that record what they were built from (pccalibrate's). Run at every build;
# OUT changes only when the commit does, so nothing rebuilds for nothing.
execute_process(COMMAND git -C ${SRC} describe --always --dirty --abbrev=12
  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
file(WRITE ${OUT}.tmp "#define PC_GIT_COMMIT \"${commit}\"\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
