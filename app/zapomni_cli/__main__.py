"""`python -m zapomni_cli ...` is the `zapomni` command."""

from zapomni_cli.launch import main

if __name__ == "__main__":
    main()
