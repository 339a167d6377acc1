"""The contract's failures (docs/errors.md): what a failure is, its body and the app's own
exceptions (:mod:`.failures`), and how any exception becomes that body (:mod:`.handler`,
the API's exception handler). The API and the authentication classes raise them; nothing
here knows a view."""
