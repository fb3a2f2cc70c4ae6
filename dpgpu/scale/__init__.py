"""Running the counting reductions over several processes or machines.

:mod:`.partitions` is the interface every mechanism counts through
(``engine="local"``: one partition, in this process); :mod:`.dask` is the
Dask engine (``engine="dask"``) and :mod:`.loading` reads a file on the
Dask workers (:func:`.loading.load_distributed`); both are imported only
when asked for.
"""
