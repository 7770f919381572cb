; JavaScript has no import forms beyond ecma/imports.scm.
