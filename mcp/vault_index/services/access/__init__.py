"""Who may read what: access grants, workspace boundaries, bearer tokens and OAuth."""
