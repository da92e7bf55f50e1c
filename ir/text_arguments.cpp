#include "ir/text_arguments.h"

namespace widefuse {

llvm::SmallVector<ArgumentForm, 3> argumentForms(OpKind op) {
  llvm::SmallVector<ArgumentForm, 3> forms(opArity(op), ArgumentForm::Value);
  switch (opTypeRule(op)) {
  case TypeRule::Cast:
  case TypeRule::Bitcast:
    forms.push_back(ArgumentForm::DataType);
    break;
  case TypeRule::Broadcast:
    forms.push_back(ArgumentForm::Shape);
    forms.push_back(ArgumentForm::Dims);
    break;
  case TypeRule::Extent:
    forms.push_back(ArgumentForm::Dim);
    break;
  case TypeRule::BlockExpansion:
    forms.push_back(ArgumentForm::Shape);
    forms.push_back(ArgumentForm::Block);
    break;
  case TypeRule::CodeLookup:
  case TypeRule::CodeSearch:
    forms.push_back(ArgumentForm::Codebook);
    break;
  default:
    break;
  }
  return forms;
}

std::string describeForms(OpKind op) {
  switch (opTypeRule(op)) {
  case TypeRule::Cast:
  case TypeRule::Bitcast:
    return " (a value and a dtype)";
  case TypeRule::Broadcast:
    return " (a value, a shape list and a dims list)";
  case TypeRule::Extent:
    return " (a tensor and a dimension)";
  case TypeRule::BlockExpansion:
    return " (a value, a shape list and block=B)";
  case TypeRule::CodeLookup:
  case TypeRule::CodeSearch:
    return " (a value and codebook=NAME)";
  default:
    return "";
  }
}

} // namespace widefuse
