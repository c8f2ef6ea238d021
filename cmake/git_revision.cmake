# Writes OUT with the current git revision; leaves the file untouched when nothing changed,
# so a build after a commit relinks only what depends on the revision.
# "-dirty" says that the code the binary is built from differs from the commit: changes to
# results, docs, configs or tests (a rerun of a reference script, a note) do not make it dirty.
# GIVEN (the cache variable CTXSIM_GIT_REVISION), when not empty, is taken as it is: a source tree
# without .git, such as a container's build stage, is told the revision of the tree it came from.
if(DEFINED GIVEN AND NOT GIVEN STREQUAL "")
  set(rev "${GIVEN}")
else()
  execute_process(COMMAND git -C "${SRC}" describe --always --abbrev=12
                  OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0 OR rev STREQUAL "")
    set(rev "unknown")
  else()
    execute_process(COMMAND git -C "${SRC}" status --porcelain --untracked-files=no -- CMakeLists.txt cmake pipeline stages
                    OUTPUT_VARIABLE changed OUTPUT_STRIP_TRAILING_WHITESPACE
                    RESULT_VARIABLE rc ERROR_QUIET)
    if(NOT rc EQUAL 0 OR NOT changed STREQUAL "")
      set(rev "${rev}-dirty")
    endif()
  endif()
endif()
set(content "#pragma once\n#define CTXSIM_VERSION \"${VERSION}\"\n#define CTXSIM_GIT_REVISION \"${rev}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL content)
  file(WRITE "${OUT}" "${content}")
endif()
