/* A program an app developer would write against an installed fgemma: built by check_install.sh
 * once with pkg-config and once with find_package(fgemma). Usage: consumer MODEL_DIR */
#include <fgemma/fgemma.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  fgemma_model* model = NULL;
  if (fgemma_model_load(argv[1], fgemma_model_default_params(), &model) != FGEMMA_OK) {
    fprintf(stderr, "load failed: %s\n", fgemma_last_error());
    return 1;
  }
  int32_t ids[64];
  const int64_t n = fgemma_tokenize(model, "turn on the lights", 18, true, false, ids, 64);
  printf("fgemma %s abi %d: %lld tokens\n", fgemma_version(), (int)fgemma_abi_version(), (long long)n);
  fgemma_model_free(model);
  return n > 1 ? 0 : 1;
}
