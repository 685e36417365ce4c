\set n random_zipfian(1, 1000, 1.07) % 3
\if :n = 0
  SELECT 1 AS one \gset p_
\elif :n = 1 and :client_id >= 0
  \sleep :n ms
\else
  \setshell x echo 7
  \shell true :x
\endif
\startpipeline
SELECT :p_one \; SELECT 'a''b' -- comment
\aset
\syncpipeline
\endpipeline
\set f hash_murmur2(:n, 5) + permute(3, 10, :default_seed) * exp(ln(2.5)) / pi()
\set s greatest(least(1, 2.5), abs(-3), sqrt(4.0), int(5.9), double(7), mod(-7, 3))
\set b case when :n is null then true else not (:n <> 2) end
SELECT debug(:f), :s, :b;
