"""`box check`: prove every wall from inside a box started with the worker's own flags."""
