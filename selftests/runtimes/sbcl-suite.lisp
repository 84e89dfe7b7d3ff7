;;;; SBCL's own tests of sb-concurrency (sbcl-source's contrib/sb-concurrency/tests,
;;;; the directory in SB_CONCURRENCY_TESTS), run by sb-rt: selftests/runtimes/run.sh.
(require :sb-rt)
(require :sb-concurrency)
(require :sb-posix)
(defpackage :test-util (:use :cl) (:import-from :sb-rt #:deftest) (:export #:deftest))
(defvar *dir* (concatenate (quote string) (sb-ext:posix-getenv "SB_CONCURRENCY_TESTS") "/"))
(dolist (f '("package.lisp" "test-utils.lisp"
             "test-queue.lisp" "test-mailbox.lisp"
             "test-gate.lisp" "test-frlock.lisp"))
  (load (concatenate 'string *dir* f)))
(let ((ok (sb-rt:do-tests)))
  (format t "~&suite: ~a~%" (if ok "passed" "failed"))
  (sb-ext:exit :code (if ok 0 1)))
