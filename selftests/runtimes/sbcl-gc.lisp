;;;; SBCL under faultline (selftests/runtimes/run.sh, sbcl-gc): 4 threads cons
;;;; and catch errors (SBCL's error traps are int3: SIGTRAP, whose handler
;;;; has no SA_ONSTACK), its GC stops them with signals, a full GC at the
;;;; end, the whole under SIGPROF sampling (sb-sprof).
(require :sb-sprof)

;;; RT_MAPS: a copy of /proc/self/maps; RT_TASKS: the threads' names (run.sh's mapped).
(defun leave-traces ()
  (let ((maps (sb-ext:posix-getenv "RT_MAPS")) (tasks (sb-ext:posix-getenv "RT_TASKS")))
    (when maps
      (with-open-file (o maps :direction :output :if-exists :supersede)
        (with-open-file (i "/proc/self/maps")
          (loop for l = (read-line i nil) while l do (write-line l o)))))
    (when tasks
      (with-open-file (o tasks :direction :output :if-exists :supersede)
        (dolist (d (directory "/proc/self/task/*/"))
          (ignore-errors
            (with-open-file (i (merge-pathnames "comm" d))
              (write-line (read-line i) o))))))))

(leave-traces)

(defun churn (n)
  (let ((keep (make-array 1000 :initial-element nil)) (caught 0))
    (dotimes (i n)
      (setf (aref keep (mod i 1000)) (make-list (mod i 50)))
      (when (zerop (mod i 100))
        (handler-case (error "boom ~a" i)
          (error () (incf caught))))
      (when (zerop (mod i 1000))
        (handler-case (car (the list (aref keep (mod (+ i 7) 1000))))
          (error () (incf caught)))))
    caught))

(let (results)
  (sb-sprof:with-profiling (:max-samples 100000 :mode :cpu :sample-interval 0.001 :report nil)
    (let ((threads (loop for k below 4
                         collect (sb-thread:make-thread (lambda () (churn 400000))))))
      (setf results (mapcar #'sb-thread:join-thread threads))))
  (sb-ext:gc :full t)
  (format t "caught ~a~%" results)
  (format t "profiled: ~:[no~;yes~]~%" (plusp (sb-sprof::samples-index sb-sprof::*samples*))))
