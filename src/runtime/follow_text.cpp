#include "runtime/follow_text.h"

namespace fgemma {

Result<int32_t> FollowText::Choose(const HeadChoice& choice) {
  if (at_ >= text_.size()) return choice.argmax;
  const std::string_view rest = std::string_view(text_).substr(at_);
  EncodeOptions eo;
  eo.parse_special = true;
  const std::vector<int32_t> canonical = vocab_.tokenizer().Encode(rest.substr(0, 64), eo);
  if (!canonical.empty() && choice.Allows(canonical[0]) && rest.starts_with(vocab_.TokenText(canonical[0])))
    return canonical[0];
  // Else the longest allowed token the text starts with.
  int32_t best = -1;
  size_t best_len = 0;
  auto consider = [&](int32_t id) {
    const std::string text = vocab_.TokenText(id);
    if (text.size() > best_len && rest.starts_with(text)) {
      best = id;
      best_len = text.size();
    }
  };
  if (choice.allowed_mask == nullptr) {
    for (int32_t id : choice.candidates) consider(id);
  } else {
    for (int32_t id = 0; id < vocab_.vocab_size(); ++id)
      if (choice.Allows(id)) consider(id);
  }
  if (best < 0)
    return InvalidArgument("follow text cannot continue at byte " + std::to_string(at_) + ": no allowed token starts '" +
                           text_.substr(at_, 24) + "'");
  return best;
}

Status FollowText::Appended(int32_t id) {
  if (at_ >= text_.size()) return Status::Ok();
  const std::string text = vocab_.TokenText(id);
  if (text_.compare(at_, text.size(), text) != 0) {
    return InvalidArgument("follow text departs from the grammar at byte " + std::to_string(at_) + ": '" +
                           text_.substr(at_, 24) + "' where the output continues '" + text + "'");
  }
  at_ += text.size();
  return Status::Ok();
}

}  // namespace fgemma
