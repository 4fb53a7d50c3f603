"""Object stores (``s3://``, ``gs://``, ``az://``) and the local cache of model versions taken
from them: the supervisor's side only (workers read local files)."""
