// The C API test suites' shared fixture: the mini bf16 model loaded once per suite through
// fgemma_model_load, and the smart-home tool catalog its calls use.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "fgemma/fgemma.h"
#include "test_support.h"
#include "util/mapped_file.h"

namespace fgemma::test {

class MiniModelCapiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(fgemma_model_load(FixturePath("models/mini-bf16").c_str(), fgemma_model_default_params(), &model_),
              FGEMMA_OK)
        << fgemma_last_error();
    auto tools = ReadFileToString(FixturePath("chat/smart-home-tools.json"));
    ASSERT_TRUE(tools.ok());
    tools_ = new std::string(tools.value());
  }
  static void TearDownTestSuite() {
    fgemma_model_free(model_);
    model_ = nullptr;
    delete tools_;
    tools_ = nullptr;
  }
  static inline fgemma_model* model_ = nullptr;
  static inline std::string* tools_ = nullptr;  // smart-home-tools.json
};

}  // namespace fgemma::test
