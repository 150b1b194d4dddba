/*
 * llvm.c — the LLVM side of trnc: the host code path (verified program ->
 * LLVM IR -> host object code, run by ORC LLJIT) lives here, so LLVM-C is
 * included nowhere else (tests/check_layers.py checks it). For now it
 * reports the linked LLVM's version.
 */
#define _POSIX_C_SOURCE 200809L
#include <llvm-c/Core.h>
#include <stdio.h>

#include "trnc/trnc.h"

const char *trnc_llvm_version(void) {
  static char buf[32];
  if (!buf[0]) {
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(buf, sizeof buf, "%u.%u.%u", major, minor, patch);
  }
  return buf;
}
